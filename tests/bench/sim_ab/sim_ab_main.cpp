// Two builds of the simulator in one process, their steps alternated, so that both see the same
// machine state (on a shared machine the speed of a core changes from one run to the next, which
// a comparison of separate runs cannot tell from a change in the code). Prints the medians and
// the median of the per-pair ratios B/A, warm (steps back to back on one sample) and routed (the
// routing source writes a sample before each step, as in `moex-cli simulate`).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" {
void* A_make(const char*);
void A_next(void*);
double A_step(void*);
double A_stepTimeUs(void*);
void* B_make(const char*);
void B_next(void*);
double B_step(void*);
double B_stepTimeUs(void*);
}

namespace {
double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: sim_ab SCENARIO.yaml [WARM_STEPS] [ROUTED_STEPS]\n");
        return 2;
    }
    const int warmSteps = argc > 2 ? std::atoi(argv[2]) : 300;
    const int routedSteps = argc > 3 ? std::atoi(argv[3]) : 20;
    void* a = A_make(argv[1]);
    void* b = B_make(argv[1]);
    std::vector<double> wa, wb, wr, ra, rb, rr;
    int disagree = 0;
    for (int i = 0; i < warmSteps; ++i) {  // which tree goes first alternates
        const double x1 = i % 2 ? A_step(a) : 0.0;
        const double y = B_step(b);
        const double x = i % 2 ? x1 : A_step(a);
        wa.push_back(x);
        wb.push_back(y);
        wr.push_back(y / x);
        disagree += A_stepTimeUs(a) != B_stepTimeUs(b);
    }
    for (int i = 0; i < routedSteps; ++i) {
        A_next(a);
        const double x = A_step(a);
        B_next(b);
        const double y = B_step(b);
        ra.push_back(x);
        rb.push_back(y);
        rr.push_back(y / x);
        disagree += A_stepTimeUs(a) != B_stepTimeUs(b);
    }
    std::printf("warm   (%d pairs): A %.0f us  B %.0f us  median B/A %.3f\n", warmSteps, median(wa), median(wb), median(wr));
    std::printf("routed (%d pairs): A %.0f us  B %.0f us  median B/A %.3f\n", routedSteps, median(ra), median(rb), median(rr));
    std::printf("simulated step times that differ between A and B: %d of %d\n", disagree, warmSteps + routedSteps);
    return 0;
}
