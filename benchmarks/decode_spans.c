/* How a llama.cpp program spends a decoding step: the time inside each llama_decode (or llama_process)
 * call and the time between two of them, where the program samples, reads the token and writes it out.
 * Preloaded into llama-server, it shows what `vs_llama_server.py --profile` cannot see from outside (the
 * split of one thread's time); Prefill's scheduler times the same split itself (`StepRates`' parts).
 *
 *   gcc -O2 -shared -fPIC -o decode_spans.so benchmarks/decode_spans.c -ldl
 *   DECODE_SPANS_OUT=spans.json LD_PRELOAD=$PWD/decode_spans.so llama-server -m model.gguf ...
 *
 * On a clean exit (SIGINT) it writes one JSON object: calls, steps (consecutive calls of under 40 ms,
 * less than 5 ms apart: a decoding run, not a prompt or an idle wait), the gap between them (p50, mean)
 * and the call's own time (p50, mean, p90). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_CALLS 400000
#define STEP_MS 40.0
#define GAP_MS 5.0

typedef struct { int32_t n_tokens; void *token, *embd, *pos, *n_seq_id, *seq_id, *logits; } batch_t;

static double t_in[MAX_CALLS], t_out[MAX_CALLS];
static int n_calls;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void note(double a, double b) {
    if (n_calls < MAX_CALLS) {
        t_in[n_calls] = a;
        t_out[n_calls] = b;
        n_calls++;
    }
}

int32_t llama_decode(void *ctx, batch_t batch) {
    static int32_t (*real)(void *, batch_t);
    if (!real) real = (int32_t (*)(void *, batch_t))dlsym(RTLD_NEXT, "llama_decode");
    double a = now_ms();
    int32_t rc = real(ctx, batch);
    note(a, now_ms());
    return rc;
}

int32_t llama_process(void *ctx, int type, void *batch) {
    static int32_t (*real)(void *, int, void *);
    if (!real) real = (int32_t (*)(void *, int, void *))dlsym(RTLD_NEXT, "llama_process");
    double a = now_ms();
    int32_t rc = real(ctx, type, batch);
    note(a, now_ms());
    return rc;
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double mean(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0;
}

__attribute__((destructor)) static void report(void) {
    static double gap[MAX_CALLS], call[MAX_CALLS];
    int n_gap = 0, n_call = 0;
    for (int i = 0; i < n_calls; i++) {
        double d = t_out[i] - t_in[i];
        if (d >= STEP_MS) continue;
        call[n_call++] = d;
        if (i > 0 && t_out[i - 1] - t_in[i - 1] < STEP_MS && t_in[i] - t_out[i - 1] < GAP_MS)
            gap[n_gap++] = t_in[i] - t_out[i - 1];
    }
    double gap_mean = mean(gap, n_gap), call_mean = mean(call, n_call);
    qsort(gap, n_gap, sizeof gap[0], by_value);
    qsort(call, n_call, sizeof call[0], by_value);
    const char *path = getenv("DECODE_SPANS_OUT");
    FILE *f = fopen(path ? path : "decode_spans.json", "w");
    if (!f) return;
    fprintf(f, "{\"calls\": %d, \"steps\": %d, \"between_ms_p50\": %.4f, \"between_ms_mean\": %.4f, "
               "\"call_ms_p50\": %.3f, \"call_ms_mean\": %.3f, \"call_ms_p90\": %.3f}\n",
            n_calls, n_gap, n_gap ? gap[n_gap / 2] : 0, gap_mean, n_call ? call[n_call / 2] : 0, call_mean,
            n_call ? call[n_call * 9 / 10] : 0);
    fclose(f);
}
