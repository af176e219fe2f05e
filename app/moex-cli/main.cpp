// moex-cli entry point; commands are being filled in.
#include <cstdio>
int main() { std::puts("moex-cli"); return 0; }
