/* pico_timing: a QEMU TCG plugin that turns an emulated run of a rip firmware into an
 * estimate of the cycles the same instruction stream takes on a Raspberry Pi Pico (RP2040,
 * Cortex-M0+) or Pico 2 (RP2350, Cortex-M33) executing in place from QSPI flash.
 *
 * For every executed instruction it charges the cycles the core's reference manual gives
 * for its class (docs/pico-timing.md has the tables and their sources), and it passes every
 * instruction fetch and data read in the flash window through a model of the chip's XIP
 * cache; a miss stalls the core for the QSPI transfer. Execution of a "mark" address (rip's
 * SysTick read, rip_systick_ticks) closes one segment and opens the next, so segments line
 * up with the intervals the firmware times with SysTick. Code ranges given as "replace" are
 * charged a fixed cost per call instead of their instructions (the RP2040's SIO divider
 * routine of the Pico SDK in place of libgcc's software division).
 *
 * Arguments (key=value, QEMU's -plugin FILE,arg=value,...):
 *   out=PATH          where the segments are written at exit (required)
 *   core=m0plus|m33   the cost table
 *   flash=LO:HI       the flash window [LO, HI) (hex or decimal)
 *   cache=0|1         model the XIP cache (0: flash reads cost what SRAM reads cost)
 *   cache_bytes, ways, line, fill   cache geometry (fill: bytes one miss brings in)
 *   miss=N            stall cycles of a miss (a fresh QSPI transfer)
 *   seq_miss=N, cooldown=N, pagebreak=N   a miss on the fill right after the previous one,
 *                     within `cooldown` cycles of its end and not at a `pagebreak`
 *                     boundary, continues that transfer and costs seq_miss (0: never)
 *   div=N             cycles of SDIV/UDIV (Cortex-M33; the TRM range is 2..12)
 *   exception=N       cycles of an exception entry
 *   mark=ADDR         (repeatable) the first instruction of a segment marker
 *   replace=LO:HI:N   (repeatable) charge N cycles per entry into [LO, HI)
 *   profile=PATH      also write per-instruction counts (pc size count cycles stall)
 *   progress=ADDR     two-core mode (issue 27): the address of rip_core_progress[0]
 *   spin=LO:HI        (repeatable, two-core mode) rip_core_spin's code (and its clones)
 *
 * Two-core mode times each vCPU of a dual-core machine as one core of the chip: its own
 * clock, pipeline state and segments, and the chip's one XIP cache shared by both (the
 * order the accesses reach it is QEMU's round-robin interleaving, each core's QSPI
 * transfers are its own: no contention for the bus is modelled). A core in rip_core_spin
 * is idle, neither counted nor charged. It writes each core's synchronisations ("event"
 * lines: vcpu, kind, instructions and cycles so far) for rip.timing.two_core to replay:
 * the critical path in instructions and in the chip's cycles.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_API_VERSION;

enum core { CORE_M0PLUS, CORE_M33 };

/* Instruction classes the cost rules need. */
enum {
    F_BRANCH = 1u << 0,   /* may write the PC */
    F_LOAD1 = 1u << 1,    /* a single load (LDR, LDRB, LDRH, LDRSB, LDRSH) */
    F_STORE1 = 1u << 2,   /* a single store */
    F_DP = 1u << 3,       /* data processing that writes `dst` */
    F_IT = 1u << 4,       /* IT */
    F_MARK = 1u << 5,     /* a segment marker */
    F_CONDMEM = 1u << 6,  /* a conditional (IT block) load/store: its access costs extra */
    F_DIV = 1u << 7,      /* SDIV/UDIV */
    F_UNKNOWN = 1u << 8,  /* an encoding the decoder does not classify (charged 1) */
};

struct insn {
    uint32_t pc, next; /* next: the fall-through address */
    uint8_t size;
    uint16_t flags;
    uint16_t base;     /* cycles when not taken / unconditional */
    uint16_t taken;    /* extra cycles when the PC changes (conditional or late-resolved) */
    uint16_t mem_cost; /* F_CONDMEM: cycles charged when the access happens */
    uint16_t dst, addr; /* register masks: written (F_DP, F_LOAD1), address operands */
    int16_t replace;   /* index of the replace range holding it, or -1 */
    uint64_t count, cycles, stall;
    struct insn *all;  /* every decoded instruction, for the profile */
};

struct segment {
    uint64_t insns, cycles, stall, fetch_hits, fetch_misses, data_hits, data_misses;
    uint64_t seq_misses, divides, replaced_calls, replaced_insns, exceptions, unknown;
};

#define MAX_MARKS 16
#define MAX_REPLACE 32
#define MAX_SPINS 4

static struct {
    enum core core;
    uint32_t flash_lo, flash_hi;
    int cache;
    uint32_t cache_bytes, ways, line, fill, miss, seq_miss, cooldown, pagebreak;
    uint32_t div, exception;
    uint32_t marks[MAX_MARKS];
    int n_marks;
    uint32_t rep_lo[MAX_REPLACE], rep_hi[MAX_REPLACE], rep_cycles[MAX_REPLACE];
    int n_replace;
    uint32_t progress; /* two-core mode: the address of rip_core_progress[0], else 0 */
    uint32_t spin_lo[MAX_SPINS], spin_hi[MAX_SPINS];
    int n_spins;
    char out[1024], profile[1024];
} P = {
    .core = CORE_M0PLUS, .cache = 1, .cache_bytes = 16384, .ways = 2, .line = 8, .fill = 8,
    .miss = 40, .seq_miss = 0, .cooldown = 0, .pagebreak = 0, .div = 12, .exception = 15,
};

/* The cache: sets x ways tags, a valid bit per fill unit, and the age of each way. Sizes
 * are powers of two, so addresses split with shifts (this runs for every fetch). */
static uint32_t n_sets, line_shift, set_shift, fill_shift;
static uint32_t *tags;
static uint8_t *valid, *age;

#define MAX_VCPUS 2

/* One core's run: in two-core mode (progress= given) each vCPU has its own clock, pipeline
 * state and segments; the cache is the chip's one, shared. */
struct run_state {
    struct insn *prev;     /* the instruction executed last */
    struct insn *pending;  /* F_CONDMEM instruction whose access is not yet charged */
    int in_replace;        /* executing inside a replace range */
    uint32_t last_word;    /* the fetch word fetched last */
    uint64_t now;          /* cycles since the start */
    uint64_t insns;        /* instructions executed (outside the spin) */
    uint32_t last_fill;    /* flash offset of the last miss's fill, and when it ended */
    uint64_t last_fill_end;
    int have_fill;
    struct segment *segs;
    size_t n_segs, cap_segs;
};

/* A synchronisation of a two-core run (kernels/rip_cores.h), told apart by address alone
 * (the plugin API reads no values): P a store by core v to its own counter (a publish),
 * W a load of the other's counter outside the spin (a wait), R a store to the other's
 * counter (rip_core_reset), M a mark; with that core's instructions and cycles so far. */
struct event {
    uint64_t insns, cycles;
    uint8_t vcpu, mark;
    char kind;
};

static struct run_state C[MAX_VCPUS];
static struct run_state *S = &C[0];
static struct insn *all_insns; /* every decoded instruction, for the profile */
static struct {
    struct event *list;
    size_t n, cap;
    int too_many_vcpus;
} E;

static struct segment *seg(void) { return &S->segs[S->n_segs - 1]; }

static void record(char kind, uint8_t mark) {
    if (E.n == E.cap) {
        E.cap = E.cap ? 2 * E.cap : 4096;
        E.list = realloc(E.list, E.cap * sizeof *E.list);
        if (!E.list) {
            abort();
        }
    }
    E.list[E.n++] = (struct event){S->insns, S->now, (uint8_t)(S - C), mark, kind};
}

static void new_segment(void) {
    if (S->n_segs == S->cap_segs) {
        S->cap_segs = S->cap_segs ? 2 * S->cap_segs : 64;
        S->segs = realloc(S->segs, S->cap_segs * sizeof *S->segs);
        if (!S->segs) {
            abort();
        }
    }
    memset(&S->segs[S->n_segs++], 0, sizeof *S->segs);
}

/* ---- the XIP cache ------------------------------------------------------------------ */

/* Stall cycles of one access to flash address `a` (a fetch or a data read). */
static uint64_t flash_access(uint32_t a, int fetch) {
    struct segment *s = seg();
    if (!P.cache) {
        return 0;
    }
    const uint32_t off = a - P.flash_lo;
    const uint32_t line = off >> line_shift;
    const uint32_t set = line & (n_sets - 1), tag = line >> set_shift;
    const uint32_t unit = (off & (P.line - 1)) >> fill_shift;
    uint32_t *t = &tags[set * P.ways];
    uint8_t *v = &valid[set * P.ways], *g = &age[set * P.ways];
    uint32_t way = P.ways;
    for (uint32_t w = 0; w < P.ways; w++) {
        if (v[w] && t[w] == tag) {
            way = w;
        }
    }
    int hit = way < P.ways && (v[way] & (1u << unit));
    if (way == P.ways) { /* allocate: the least recently used way */
        way = 0;
        for (uint32_t w = 1; w < P.ways; w++) {
            if (!v[w] || (v[way] && g[w] > g[way])) {
                way = w;
            }
        }
        t[way] = tag;
        v[way] = 0;
    }
    for (uint32_t w = 0; w < P.ways; w++) { /* LRU: the way used is the youngest */
        if (g[w] < 255) {
            g[w]++;
        }
    }
    g[way] = 0;
    if (hit) {
        fetch ? s->fetch_hits++ : s->data_hits++;
        return 0;
    }
    v[way] |= (uint8_t)(1u << unit);
    fetch ? s->fetch_misses++ : s->data_misses++;
    const uint32_t fill = off & ~(P.fill - 1);
    uint64_t cost = P.miss;
    if (P.seq_miss && S->have_fill && fill == S->last_fill + P.fill &&
        S->now <= S->last_fill_end + P.cooldown && (!P.pagebreak || (fill & (P.pagebreak - 1)))) {
        cost = P.seq_miss; /* the QMI appends the next fill to the open transfer */
        s->seq_misses++;
    }
    S->last_fill = fill;
    S->have_fill = 1;
    S->last_fill_end = S->now + cost;
    return cost;
}

static int in_flash(uint32_t a) { return a >= P.flash_lo && a < P.flash_hi; }

/* ---- decoding: the cost class of one Thumb instruction ------------------------------ */

static uint16_t bit(unsigned r) { return (uint16_t)(1u << (r & 15u)); }
static unsigned popcount16(uint32_t x) { return (unsigned)__builtin_popcount(x & 0xffffu); }

/* Pipeline refill after a taken branch on the M33: P of the Cortex-M4 TRM's table. */
enum { P_IMM = 1, P_REG = 2, P_LOAD = 3 };

static void branch_always(struct insn *in, unsigned m0_cycles, unsigned m33_refill) {
    in->flags |= F_BRANCH;
    if (P.core == CORE_M0PLUS) {
        in->base = (uint16_t)m0_cycles;
    } else {
        in->base = 1; /* the refill is charged when the target executes (it depends on it) */
        in->taken = (uint16_t)m33_refill;
    }
}

static void branch_cond(struct insn *in) {
    in->flags |= F_BRANCH;
    in->base = 1;
    in->taken = 1; /* M0+: 2 taken; M33: 1 + P with P = 1 for an immediate target */
}

static void load1(struct insn *in, unsigned rt, uint16_t addr) {
    in->flags |= F_LOAD1;
    in->dst = bit(rt);
    in->addr = addr;
    in->base = 2;
    if (rt == 15) { /* LDR PC: a load, then the refill */
        in->flags &= (uint16_t)~F_LOAD1;
        branch_always(in, 4, P_LOAD);
        in->base = (uint16_t)(P.core == CORE_M0PLUS ? 4 : 2);
    }
}

/* Single stores: 2 cycles; on the M33 an immediate-offset store is 1 (its data phase
 * overlaps the next instruction, Cortex-M4 TRM load/store timings). */
static void store1(struct insn *in, uint16_t addr, int imm_offset) {
    in->flags |= F_STORE1;
    in->addr = addr;
    in->base = (uint16_t)(P.core == CORE_M33 && imm_offset ? 1 : 2);
}

/* LDM/STM/PUSH/POP of `n` registers (the PC included): 1 + N; loading the PC adds the
 * refill. The M0+'s POP {<loreglist>, PC} is 3 + N with N the low registers: one issue
 * cycle, N + 1 loads and its one-cycle refill. */
static void multi(struct insn *in, unsigned n, int loads_pc) {
    in->base = (uint16_t)(1 + n);
    if (loads_pc) {
        in->flags |= F_BRANCH;
        if (P.core == CORE_M0PLUS) {
            in->base = (uint16_t)(3 + n - 1);
        } else {
            in->taken = P_LOAD;
        }
    }
}

static void dp(struct insn *in, unsigned rd) {
    in->flags |= F_DP;
    in->dst = bit(rd);
    in->base = 1;
    if (rd == 15) { /* MOV PC / ADD PC */
        in->flags &= (uint16_t)~F_DP;
        branch_always(in, 2, P_REG);
    }
}

static void decode16(struct insn *in, uint32_t h) {
    in->base = 1;
    if ((h >> 14) == 0) { /* shift (imm), add, subtract, move, compare */
        if ((h >> 11) == 0x5) {
            return; /* CMP imm */
        }
        dp(in, (h >> 11) >= 4 ? (h >> 8) & 7 : h & 7);
    } else if ((h >> 10) == 0x10) { /* data processing */
        const uint32_t op = (h >> 6) & 0xf;
        if (op != 0x8 && op != 0xa && op != 0xb) { /* not TST, CMP, CMN */
            dp(in, h & 7);
        }
    } else if ((h >> 10) == 0x11) { /* special data, branch and exchange */
        const uint32_t op = (h >> 8) & 3;
        const unsigned rd = ((h >> 4) & 8) | (h & 7);
        if (op == 0 || op == 2) {
            dp(in, rd); /* ADD / MOV high registers */
        } else if (op == 3) {
            branch_always(in, 2, P_REG); /* BX, BLX */
        }
    } else if ((h >> 11) == 0x9) { /* LDR literal */
        load1(in, (h >> 8) & 7, 0);
    } else if ((h >> 12) == 0x5) { /* load/store, register offset */
        const uint32_t op = (h >> 9) & 7;
        const uint16_t addr = (uint16_t)(bit((h >> 3) & 7) | bit((h >> 6) & 7));
        if (op <= 2) {
            store1(in, addr, 0);
        } else {
            load1(in, h & 7, addr);
        }
    } else if ((h >> 13) == 0x3 || (h >> 12) == 0x8) { /* load/store, immediate offset */
        const uint16_t addr = bit((h >> 3) & 7);
        if (h & (1u << 11)) {
            load1(in, h & 7, addr);
        } else {
            store1(in, addr, 1);
        }
    } else if ((h >> 12) == 0x9) { /* load/store, SP-relative */
        if (h & (1u << 11)) {
            load1(in, (h >> 8) & 7, bit(13));
        } else {
            store1(in, bit(13), 1);
        }
    } else if ((h >> 12) == 0xa) { /* ADR, ADD SP */
        dp(in, (h >> 8) & 7);
    } else if ((h >> 12) == 0xb) { /* miscellaneous */
        const uint32_t op = (h >> 8) & 0xf;
        if (op == 0x0) {
            dp(in, 13); /* ADD/SUB SP */
        } else if ((op & 0x5) == 0x1) {
            branch_cond(in); /* CBZ, CBNZ */
        } else if (op == 0x2 || op == 0xa) {
            dp(in, h & 7); /* extend, reverse */
        } else if (op == 0x4 || op == 0x5) {
            multi(in, popcount16(h & 0x1ff), 0); /* PUSH */
        } else if (op == 0xc || op == 0xd) {
            multi(in, popcount16(h & 0x1ff), (h >> 8) & 1); /* POP */
        } else if (op == 0xf && (h & 0xf) != 0) {
            in->flags |= F_IT;
            in->base = 1;
        } else if (op == 0xf && ((h >> 4) & 0xf) >= 2 && ((h >> 4) & 0xf) <= 3) {
            in->base = 2; /* WFE, WFI */
        }
    } else if ((h >> 12) == 0xc) { /* LDM, STM */
        const uint32_t rn = (h >> 8) & 7;
        multi(in, popcount16(h & 0xff), 0);
        if ((h >> 11) & 1) {
            in->dst = (uint16_t)((h & 0xff) | bit(rn));
        }
    } else if ((h >> 12) == 0xd) {
        if (((h >> 8) & 0xf) < 0xe) {
            branch_cond(in); /* B<cond> */
        } else {
            in->flags |= F_BRANCH; /* UDF, SVC: an exception */
        }
    } else if ((h >> 11) == 0x1c) {
        branch_always(in, 2, P_IMM); /* B */
    } else {
        in->flags |= F_UNKNOWN;
    }
}

static void decode32(struct insn *in, uint32_t h1, uint32_t h2) {
    in->base = 1;
    const uint32_t op1 = (h1 >> 11) & 3;
    const unsigned rn = h1 & 0xf, rt = (h2 >> 12) & 0xf, rd = (h2 >> 8) & 0xf;
    if (op1 == 1) {
        if ((h1 & 0x0640) == 0x0000) { /* load/store multiple */
            const int load = (h1 >> 4) & 1;
            multi(in, popcount16(h2), load && (h2 & 0x8000));
            if (load) {
                in->dst = (uint16_t)(h2 | bit(rn));
            }
        } else if ((h1 & 0x0640) == 0x0040) { /* dual, exclusive, table branch */
            if ((h1 & 0x01a0) == 0x0080 && (h2 & 0xffe0) == 0xf000) {
                branch_always(in, 6, P_LOAD); /* TBB, TBH: load, add, refill */
                in->base = 3;
            } else if ((h1 & 0x0120) == 0 && (h1 & 0x0080) == 0) {
                in->base = 2; /* LDREX, STREX */
                in->addr = bit(rn);
            } else {
                in->base = 3; /* LDRD, STRD: 1 + N */
                in->addr = bit(rn);
            }
        } else if ((h1 & 0x0600) == 0x0200) { /* data processing, shifted register */
            const uint32_t op = (h1 >> 5) & 0xf;
            if (!(rd == 15 && (op == 0 || op == 4 || op == 8 || op == 13))) {
                dp(in, rd); /* not TST, TEQ, CMN, CMP */
            }
        } else { /* coprocessor, floating point */
            const uint32_t c = (h1 >> 4) & 0x3f;
            if ((c & 0x20) == 0 && (c & 0x1a) != 0) {
                const unsigned n = (h2 & 0xff) / (((h2 >> 8) & 1) ? 2 : 1);
                in->base = (uint16_t)((c & 0x10) && !(c & 0x02) ? 2 : 1 + n); /* VLDR/VSTR, VLDM/VSTM */
            } else if ((c & 0x30) == 0x20 && !(h2 & 0x10) && (c & 0x0b) == 0x08) {
                in->base = 14; /* VDIV */
            } else {
                in->base = 1;
            }
        }
    } else if (op1 == 2) {
        if (!(h2 & 0x8000)) { /* data processing, immediate */
            const uint32_t op = (h1 >> 5) & 0xf;
            const int plain = (h1 >> 9) & 1;
            if (plain || !(rd == 15 && (op == 0 || op == 4 || op == 8 || op == 13))) {
                dp(in, rd);
            }
        } else if ((h2 & 0x5000) == 0x0000) { /* B<cond>.W or miscellaneous control */
            if ((h1 & 0x0380) != 0x0380) {
                branch_cond(in);
            } else if ((h1 & 0x07f0) == 0x03b0) {
                in->base = (uint16_t)(P.core == CORE_M0PLUS ? 3 : 2); /* DSB, DMB, ISB */
            } else if ((h1 & 0x07e0) == 0x0380 || (h1 & 0x07e0) == 0x03e0) {
                in->base = (uint16_t)(P.core == CORE_M0PLUS ? 3 : 1); /* MSR, MRS */
            }
        } else if ((h2 & 0x5000) == 0x1000) {
            branch_always(in, 2, P_IMM); /* B.W */
        } else if ((h2 & 0x5000) == 0x5000) {
            branch_always(in, 3, P_IMM); /* BL */
        } else {
            in->flags |= F_UNKNOWN;
        }
    } else { /* op1 == 3 */
        if ((h1 & 0x0710) == 0x0000) { /* store single */
            const int reg = !(h1 & 0x0080) && (h2 & 0x0fc0) == 0;
            store1(in, (uint16_t)(bit(rn) | (reg ? bit(h2 & 0xf) : 0)), !reg);
        } else if ((h1 & 0x0610) == 0x0010) { /* load byte, halfword, word; hints */
            const int reg = rn != 15 && !(h1 & 0x0080) && (h2 & 0x0fc0) == 0;
            const int hint = rt == 15 && (h1 & 0x0060) != 0x0040;
            if (hint) {
                in->base = 1; /* PLD, PLI */
            } else {
                load1(in, rt, rn == 15 ? 0 : (uint16_t)(bit(rn) | (reg ? bit(h2 & 0xf) : 0)));
            }
        } else if ((h1 & 0x0780) == 0x0380) { /* long multiply, divide */
            if ((h1 & 0x0070) == 0x0010 || (h1 & 0x0070) == 0x0030) {
                in->flags |= F_DIV;
                in->base = (uint16_t)P.div;
                in->dst = bit(rd);
            } else {
                in->flags |= F_DP;
                in->dst = (uint16_t)(bit(rt) | bit(rd));
            }
        } else if ((h1 & 0x0600) == 0x0200) { /* data processing register, multiply */
            dp(in, rd);
        } else { /* coprocessor, floating point */
            in->base = 1;
        }
    }
}

/* The index of the mark at `pc`, or -1. */
static int mark_index(uint32_t pc) {
    for (int k = 0; k < P.n_marks; k++) {
        if (P.marks[k] == pc) {
            return k;
        }
    }
    return -1;
}

static int in_spin(uint32_t pc) {
    for (int k = 0; k < P.n_spins; k++) {
        if (pc >= P.spin_lo[k] && pc < P.spin_hi[k]) {
            return 1;
        }
    }
    return 0;
}

static int16_t replace_at(uint32_t pc) {
    for (int k = 0; k < P.n_replace; k++) {
        if (pc >= P.rep_lo[k] && pc < P.rep_hi[k]) {
            return (int16_t)k;
        }
    }
    return -1;
}

/* ---- execution ------------------------------------------------------------------------ */

static void charge(struct insn *in, uint64_t cycles, uint64_t stall) {
    struct segment *s = seg();
    s->cycles += cycles + stall;
    s->stall += stall;
    in->cycles += cycles + stall;
    in->stall += stall;
    S->now += cycles + stall;
}

static void fetch(struct insn *in) {
    const uint32_t w0 = in->pc & ~3u, w1 = (in->pc + in->size - 1) & ~3u;
    uint64_t stall = 0;
    if (w0 != S->last_word && in_flash(w0)) {
        stall += flash_access(w0, 1);
    }
    if (w1 != w0 && in_flash(w1)) {
        stall += flash_access(w1, 1);
    }
    S->last_word = w1;
    if (stall) {
        charge(in, 0, stall);
    }
}

/* Selects the state of the vCPU a callback runs on; 0 when it is not one the model has
 * (more vCPUs than two cores: reported at exit). */
static int select_core(unsigned int vcpu) {
    if (vcpu >= MAX_VCPUS || (vcpu && !P.progress)) {
        E.too_many_vcpus = 1;
        return 0;
    }
    S = &C[vcpu];
    return 1;
}

static void on_insn(unsigned int vcpu, void *userdata) {
    if (!select_core(vcpu)) {
        return;
    }
    struct insn *in = userdata, *prev = S->prev;
    S->pending = NULL;
    if (prev && in->pc != prev->next) { /* the previous instruction changed the flow */
        if (prev->replace >= 0) {
            /* inside a routine charged as a whole: its branches are in its cost */
        } else if (prev->flags & F_BRANCH) {
            /* a refill to a 32-bit instruction straddling two fetch words costs one more */
            const unsigned straddle = P.core == CORE_M33 && in->size == 4 && (in->pc & 2);
            charge(prev, prev->taken + (prev->taken ? straddle : 0), 0);
        } else {
            seg()->exceptions++;
            charge(prev, P.exception, 0);
        }
    }
    S->prev = in;
    S->insns++;
    if (in->flags & F_MARK) {
        new_segment();
        if (P.progress) {
            record('M', (uint8_t)(mark_index(in->pc)));
        }
    }
    struct segment *s = seg();
    in->count++;
    s->insns++;
    if (in->replace >= 0) { /* a routine charged as a whole, from the outside in */
        s->replaced_insns++;
        if (!S->in_replace) {
            S->in_replace = 1;
            s->replaced_calls++;
            charge(in, P.rep_cycles[in->replace], 0);
        }
        return;
    }
    S->in_replace = 0;
    uint64_t c = in->base;
    if (P.core == CORE_M33 && prev) {
        if ((in->flags & (F_LOAD1 | F_STORE1)) && !(in->flags & F_CONDMEM)) {
            if ((prev->flags & F_LOAD1) && !(prev->dst & in->addr) && c > 1) {
                c--; /* pipelined behind the previous load */
            }
            if ((prev->flags & F_DP) && (prev->dst & in->addr)) {
                c++; /* the address waits for the register written just before */
            }
        }
        if ((in->flags & F_IT) && prev->size == 2) {
            c = 0; /* folded onto the preceding 16-bit instruction */
        }
    }
    if (in->flags & F_DIV) {
        s->divides++;
    }
    if (in->flags & F_UNKNOWN) {
        s->unknown++;
    }
    if (in->flags & F_CONDMEM) {
        S->pending = in; /* its access, if the condition passes, costs the rest */
    }
    charge(in, c, 0);
    fetch(in);
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata) {
    if (!select_core(vcpu)) {
        return;
    }
    struct insn *in = userdata;
    const uint64_t counter = vaddr - P.progress;
    if (P.progress && counter < 8) { /* a synchronisation (see struct event) */
        const unsigned owner = (unsigned)(counter >> 2);
        if (qemu_plugin_mem_is_store(info)) {
            record(owner == vcpu ? 'P' : 'R', 0);
        } else if (owner != vcpu) {
            record('W', 0);
        }
    }
    if (in->replace >= 0) {
        return;
    }
    if (S->pending == in) {
        S->pending = NULL;
        charge(in, in->mem_cost, 0);
    }
    const uint32_t a = (uint32_t)vaddr;
    if (in_flash(a) && !qemu_plugin_mem_is_store(info)) {
        const uint64_t stall = flash_access(a, 0);
        if (stall) {
            charge(in, 0, stall);
        }
    }
}

/* The IT state left over from the previous translation block (a block may end inside an IT
 * block only at its boundary; rare, and then the rest is treated as unconditional). */
static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    unsigned it_left = 0;
    for (size_t k = 0; k < n; k++) {
        struct qemu_plugin_insn *qi = qemu_plugin_tb_get_insn(tb, k);
        if (in_spin((uint32_t)qemu_plugin_insn_vaddr(qi))) {
            continue; /* a core waiting: idle, neither counted nor charged */
        }
        struct insn *in = calloc(1, sizeof *in);
        if (!in) {
            abort();
        }
        const uint8_t *b = qemu_plugin_insn_data(qi);
        in->pc = (uint32_t)qemu_plugin_insn_vaddr(qi);
        /* the width from the first halfword: QEMU's own size can include a halfword it
         * peeked at past the instruction (near a page end) */
        const uint32_t h1 = (uint32_t)b[0] | (uint32_t)b[1] << 8;
        in->size = (h1 >> 11) >= 0x1d && qemu_plugin_insn_size(qi) >= 4 ? 4 : 2;
        in->next = in->pc + in->size;
        if (in->size == 4) {
            decode32(in, h1, (uint32_t)b[2] | (uint32_t)b[3] << 8);
        } else {
            decode16(in, h1);
        }
        if (it_left) { /* inside an IT block: the condition may fail */
            it_left--;
            if (in->flags & (F_LOAD1 | F_STORE1)) {
                in->mem_cost = (uint16_t)(in->base - 1);
                in->base = 1;
                in->flags |= F_CONDMEM;
            } else if ((in->flags & F_BRANCH) && !in->taken && P.core == CORE_M33) {
                in->taken = P_REG;
            }
        }
        if (in->flags & F_IT) {
            const uint32_t mask = h1 & 0xf;
            it_left = mask & 1 ? 4 : mask & 2 ? 3 : mask & 4 ? 2 : 1;
        }
        if (mark_index(in->pc) >= 0) {
            in->flags |= F_MARK;
        }
        in->replace = replace_at(in->pc);
        in->all = all_insns;
        all_insns = in;
        qemu_plugin_register_vcpu_insn_exec_cb(qi, on_insn, QEMU_PLUGIN_CB_NO_REGS, in);
        /* every access, reads picked out in on_mem: QEMU 7.2 does not filter by kind */
        qemu_plugin_register_vcpu_mem_cb(qi, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, in);
    }
}

static void write_out(qemu_plugin_id_t id, void *userdata) {
    (void)id;
    (void)userdata;
    FILE *f = fopen(P.out, "w");
    if (!f) {
        qemu_plugin_outs("pico_timing: cannot write the output file\n");
        return;
    }
    fprintf(f, "pico_timing core=%s cache=%d cache_bytes=%u ways=%u line=%u fill=%u miss=%u "
               "seq_miss=%u cooldown=%u pagebreak=%u div=%u exception=%u\n",
            P.core == CORE_M33 ? "m33" : "m0plus", P.cache, P.cache_bytes, P.ways, P.line, P.fill,
            P.miss, P.seq_miss, P.cooldown, P.pagebreak, P.div, P.exception);
    const unsigned n_cores = P.progress ? MAX_VCPUS : 1;
    size_t n_segs = 0;
    for (unsigned v = 0; v < n_cores; v++) {
        for (size_t k = 0; k < C[v].n_segs; k++, n_segs++) {
            const struct segment *s = &C[v].segs[k];
            fprintf(f,
                    "segment vcpu=%u index=%zu instructions=%" PRIu64 " cycles=%" PRIu64
                    " stall=%" PRIu64 " fetch_hits=%" PRIu64 " fetch_misses=%" PRIu64 " data_hits=%" PRIu64
                    " data_misses=%" PRIu64 " sequential_misses=%" PRIu64 " divides=%" PRIu64
                    " replaced_calls=%" PRIu64 " replaced_instructions=%" PRIu64
                    " exceptions=%" PRIu64 " unknown=%" PRIu64 "\n",
                    v, k, s->insns, s->cycles, s->stall, s->fetch_hits, s->fetch_misses,
                    s->data_hits, s->data_misses, s->seq_misses, s->divides, s->replaced_calls, s->replaced_insns,
                    s->exceptions, s->unknown);
        }
    }
    for (size_t k = 0; P.progress && k < E.n; k++) {
        const struct event *e = &E.list[k];
        fprintf(f, "event %u %c %" PRIu64 " %" PRIu64 " %u\n", e->vcpu, e->kind, e->insns,
                e->cycles, e->mark);
    }
    for (unsigned v = 0; P.progress && v < n_cores; v++) {
        fprintf(f, "busy %u %" PRIu64 " %" PRIu64 "\n", v, C[v].insns, C[v].now);
    }
    if (E.too_many_vcpus) {
        fprintf(f, "error more vCPUs than the %u cores modelled\n", n_cores);
    }
    fprintf(f, "end segments=%zu events=%zu\n", n_segs, E.n);
    fclose(f);
    if (P.profile[0] && (f = fopen(P.profile, "w")) != NULL) {
        for (const struct insn *in = all_insns; in; in = in->all) {
            if (in->count) {
                fprintf(f, "%08x %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %x\n", in->pc, in->size,
                        in->count, in->cycles, in->stall, in->flags);
            }
        }
        fclose(f);
    }
}

static int pow2(uint32_t x) { return x && !(x & (x - 1)); }
static uint32_t log2u(uint32_t x) { return (uint32_t)__builtin_ctz(x); }

static int parse_u32(const char *s, uint32_t *v) {
    char *end;
    unsigned long x = strtoul(s, &end, 0);
    if (end == s || (*end && *end != ':') || x > 0xffffffffUL) {
        return 0;
    }
    *v = (uint32_t)x;
    return 1;
}

static int parse_arg(const char *arg) {
    const char *eq = strchr(arg, '=');
    if (!eq) {
        return 0;
    }
    const size_t k = (size_t)(eq - arg);
    const char *v = eq + 1;
    struct { const char *name; uint32_t *field; } nums[] = {
        {"cache_bytes", &P.cache_bytes}, {"ways", &P.ways}, {"line", &P.line},
        {"fill", &P.fill}, {"miss", &P.miss}, {"seq_miss", &P.seq_miss},
        {"cooldown", &P.cooldown}, {"pagebreak", &P.pagebreak}, {"div", &P.div},
        {"exception", &P.exception},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        if (strlen(nums[i].name) == k && !strncmp(arg, nums[i].name, k)) {
            return parse_u32(v, nums[i].field);
        }
    }
    if (!strncmp(arg, "out=", 4) || !strncmp(arg, "profile=", 8)) {
        char *dst = arg[0] == 'o' ? P.out : P.profile;
        snprintf(dst, sizeof P.out, "%s", v);
        return 1;
    }
    if (!strncmp(arg, "core=", 5)) {
        P.core = !strcmp(v, "m33") ? CORE_M33 : CORE_M0PLUS;
        return !strcmp(v, "m33") || !strcmp(v, "m0plus");
    }
    if (!strncmp(arg, "cache=", 6)) {
        P.cache = atoi(v) != 0;
        return 1;
    }
    if (!strncmp(arg, "flash=", 6)) {
        const char *colon = strchr(v, ':');
        return colon && parse_u32(v, &P.flash_lo) && parse_u32(colon + 1, &P.flash_hi);
    }
    if (!strncmp(arg, "mark=", 5)) {
        return P.n_marks < MAX_MARKS && parse_u32(v, &P.marks[P.n_marks++]);
    }
    if (!strncmp(arg, "progress=", 9)) {
        return parse_u32(v, &P.progress);
    }
    if (!strncmp(arg, "spin=", 5)) {
        const char *colon = strchr(v, ':');
        const int n = P.n_spins++;
        return n < MAX_SPINS && colon && parse_u32(v, &P.spin_lo[n]) &&
               parse_u32(colon + 1, &P.spin_hi[n]) && P.spin_lo[n] < P.spin_hi[n];
    }
    if (!strncmp(arg, "replace=", 8)) {
        const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        const int n = P.n_replace;
        if (!c2 || n >= MAX_REPLACE) {
            return 0;
        }
        P.n_replace++;
        return parse_u32(v, &P.rep_lo[n]) && parse_u32(c1 + 1, &P.rep_hi[n]) &&
               parse_u32(c2 + 1, &P.rep_cycles[n]);
    }
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
    (void)info;
    for (int k = 0; k < argc; k++) {
        if (!parse_arg(argv[k])) {
            fprintf(stderr, "pico_timing: bad argument %s\n", argv[k]);
            return -1;
        }
    }
    if (!P.out[0] || !pow2(P.line) || !pow2(P.fill) || P.fill > P.line || P.line / P.fill > 8 ||
        !P.ways || P.ways > 255 || P.cache_bytes % (P.ways * P.line) ||
        !pow2(P.cache_bytes / (P.ways * P.line)) || (P.pagebreak && !pow2(P.pagebreak))) {
        fprintf(stderr, "pico_timing: need out=PATH and a cache of power-of-two sizes\n");
        return -1;
    }
    n_sets = P.cache_bytes / (P.ways * P.line);
    line_shift = log2u(P.line);
    set_shift = log2u(n_sets);
    fill_shift = log2u(P.fill);
    tags = calloc((size_t)n_sets * P.ways, sizeof *tags);
    valid = calloc((size_t)n_sets * P.ways, 1);
    age = calloc((size_t)n_sets * P.ways, 1);
    if (!tags || !valid || !age) {
        return -1;
    }
    if (P.progress && !P.n_spins) {
        fprintf(stderr, "pico_timing: a two-core run (progress=) needs spin=LO:HI\n");
        return -1;
    }
    for (unsigned v = 0; v < MAX_VCPUS; v++) {
        S = &C[v];
        S->last_word = 1; /* no word yet (words are 4-aligned) */
        new_segment();
    }
    S = &C[0];
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_atexit_cb(id, write_out, NULL);
    return 0;
}
