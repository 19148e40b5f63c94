/* two_core_count: a QEMU TCG plugin that records what a two-core rip firmware (issue 27,
 * kernels/rip_cores.h) did on each vCPU, for rip.timing.two_core to replay as if each core
 * ran one instruction per time unit.
 *
 * Per vCPU it counts the executed instructions outside rip_core_spin ("busy": the spin is
 * idle, not work) and records, in the order they happen on that vCPU, with the vCPU's busy
 * count at that moment (this instruction included):
 *   P  a publish: a store by vCPU v to progress[v] (only core v writes its counter)
 *   W  a wait: a load by vCPU v of progress[1 - v] outside the spin (the spin's own loads
 *      are idle polling, and rip_core_wait loads the other's counter once before spinning)
 *   R  a reset: a store by vCPU v to progress[1 - v] (only rip_core_reset writes the other
 *      core's counter; its store to progress[v] is recorded as a P, which the replay drops)
 *   M  a mark: the execution of a mark address (the firmware's inference marks)
 * The plugin API of QEMU 7.2 (version 1) reads neither registers nor memory values, so
 * events are told apart by addresses alone: inlining publish and wait changes nothing.
 *
 * -icount runs the vCPUs round-robin in one thread, so the global state needs no lock.
 *
 * Arguments (key=value, QEMU's -plugin FILE,arg=value,...):
 *   out=PATH          where the events are written at exit (required)
 *   progress=ADDR     the address of rip_core_progress[0] (progress[1] is the next word)
 *   spin=LO:HI        (repeatable) rip_core_spin's code [LO, HI) (and any clone of it)
 *   mark=ADDR         (repeatable) the first instruction of a mark
 *
 * Output: one line per event "<vcpu> <P|W|R|M> <busy> [mark index]", then "busy <vcpu> <n>"
 * per vCPU and "end events=<n>".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_API_VERSION;

#define MAX_VCPUS 2
#define MAX_MARKS 8
#define MAX_SPINS 4

struct event {
    uint64_t busy;
    uint8_t vcpu;
    char kind;
    uint8_t mark;
};

static struct {
    char out[1024];
    uint32_t progress;
    uint32_t spin_lo[MAX_SPINS], spin_hi[MAX_SPINS];
    int n_spins;
    uint32_t marks[MAX_MARKS];
    int n_marks;
} P;

static struct {
    uint64_t busy[MAX_VCPUS];
    struct event *events;
    size_t n, cap;
    int too_many_vcpus;
} S;

static void record(unsigned vcpu, char kind, uint8_t mark) {
    if (S.n == S.cap) {
        S.cap = S.cap ? 2 * S.cap : 4096;
        S.events = realloc(S.events, S.cap * sizeof *S.events);
        if (!S.events) {
            abort();
        }
    }
    S.events[S.n++] = (struct event){S.busy[vcpu], (uint8_t)vcpu, kind, mark};
}

/* A busy instruction; userdata is 0, or 1 + the index of the mark at its address. */
static void on_insn(unsigned int vcpu, void *userdata) {
    if (vcpu >= MAX_VCPUS) {
        S.too_many_vcpus = 1;
        return;
    }
    S.busy[vcpu]++;
    const uintptr_t mark = (uintptr_t)userdata;
    if (mark) {
        record(vcpu, 'M', (uint8_t)(mark - 1));
    }
}

/* An access by a busy instruction: a counter's word is a publish, a wait or a reset. */
static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata) {
    (void)userdata;
    const uint64_t offset = vaddr - P.progress;
    if (offset >= 8 || vcpu >= MAX_VCPUS) {
        return;
    }
    const unsigned owner = (unsigned)(offset >> 2);
    if (qemu_plugin_mem_is_store(info)) {
        record(vcpu, owner == vcpu ? 'P' : 'R', 0);
    } else if (owner != vcpu) {
        record(vcpu, 'W', 0);
    }
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t k = 0; k < n; k++) {
        struct qemu_plugin_insn *qi = qemu_plugin_tb_get_insn(tb, k);
        const uint32_t pc = (uint32_t)qemu_plugin_insn_vaddr(qi);
        int idle = 0;
        for (int i = 0; i < P.n_spins; i++) {
            idle |= pc >= P.spin_lo[i] && pc < P.spin_hi[i];
        }
        if (idle) {
            continue; /* neither counted nor watched */
        }
        uintptr_t mark = 0;
        for (int i = 0; i < P.n_marks; i++) {
            if (P.marks[i] == pc) {
                mark = (uintptr_t)i + 1;
            }
        }
        qemu_plugin_register_vcpu_insn_exec_cb(qi, on_insn, QEMU_PLUGIN_CB_NO_REGS, (void *)mark);
        qemu_plugin_register_vcpu_mem_cb(qi, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                         NULL);
    }
}

static void write_out(qemu_plugin_id_t id, void *userdata) {
    (void)id;
    (void)userdata;
    FILE *f = fopen(P.out, "w");
    if (!f) {
        qemu_plugin_outs("two_core_count: cannot write the output file\n");
        return;
    }
    for (size_t k = 0; k < S.n; k++) {
        const struct event *e = &S.events[k];
        if (e->kind == 'M') {
            fprintf(f, "%u M %" PRIu64 " %u\n", e->vcpu, e->busy, e->mark);
        } else {
            fprintf(f, "%u %c %" PRIu64 "\n", e->vcpu, e->kind, e->busy);
        }
    }
    for (unsigned v = 0; v < MAX_VCPUS; v++) {
        fprintf(f, "busy %u %" PRIu64 "\n", v, S.busy[v]);
    }
    if (S.too_many_vcpus) {
        fprintf(f, "error more than %d vCPUs\n", MAX_VCPUS);
    }
    fprintf(f, "end events=%zu\n", S.n);
    fclose(f);
}

static int parse_u32(const char *s, uint32_t *v, char stop) {
    char *end;
    const unsigned long x = strtoul(s, &end, 0);
    if (end == s || *end != stop || x > 0xffffffffUL) {
        return 0;
    }
    *v = (uint32_t)x;
    return 1;
}

static int parse_arg(const char *arg) {
    const char *v = strchr(arg, '=');
    if (!v) {
        return 0;
    }
    v++;
    if (!strncmp(arg, "out=", 4)) {
        snprintf(P.out, sizeof P.out, "%s", v);
        return 1;
    }
    if (!strncmp(arg, "progress=", 9)) {
        return parse_u32(v, &P.progress, '\0');
    }
    if (!strncmp(arg, "spin=", 5)) {
        const char *colon = strchr(v, ':');
        const int n = P.n_spins++;
        return n < MAX_SPINS && colon && parse_u32(v, &P.spin_lo[n], ':') &&
               parse_u32(colon + 1, &P.spin_hi[n], '\0') && P.spin_lo[n] < P.spin_hi[n];
    }
    if (!strncmp(arg, "mark=", 5)) {
        return P.n_marks < MAX_MARKS && parse_u32(v, &P.marks[P.n_marks++], '\0');
    }
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
    (void)info;
    for (int k = 0; k < argc; k++) {
        if (!parse_arg(argv[k])) {
            fprintf(stderr, "two_core_count: bad argument %s\n", argv[k]);
            return -1;
        }
    }
    if (!P.out[0] || !P.progress || !P.n_spins) {
        fprintf(stderr, "two_core_count: need out=PATH, progress=ADDR and spin=LO:HI\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_atexit_cb(id, write_out, NULL);
    return 0;
}
