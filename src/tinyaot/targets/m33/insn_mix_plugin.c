/* A QEMU TCG plugin for `tinyaot profile --mix`: how often each guest instruction executes, between timer reads.
 *
 * Built for the host (not the guest) by tinyaot.targets.m33.mix and loaded with
 *   qemu-system-arm ... -plugin insn_mix.so,out=FILE,mark=ADDR[,mark=ADDR...]
 * Every executed instruction adds one to its own counter (an execution callback per translated instruction:
 * exact, also when QEMU re-executes an I/O instruction under -icount, whose second run is instrumented for
 * memory only).  An instruction at a mark address (the harness's timer reads in bench_begin, bench_end and
 * bench_now) closes a segment once it has been counted: the nonzero counters are written out and reset, so a
 * segment holds exactly the instructions that the difference of two timer reads counts.  The file holds
 *   <address hex> <count> <taken>   for each instruction that ran in the segment (an address may repeat, when
 *                           it was translated again); taken: how often the next instruction executed was not
 *                           the one after it in memory (a taken branch, call or return)
 *   R <address hex>         the timer read (its instruction's address) that closes the segment
 *   E                       the instructions after the last read, then the end of the run.
 *
 * Only the few functions of QEMU's plugin API this uses are declared here; their signatures are the same from
 * QEMU 4.2 on.  QEMU_PLUGIN_API is the API version the plugin claims: 1 up to QEMU 8.x, 2 from 9.0 (whose
 * minimum is 2); mix.py passes the one the installed QEMU wants. */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

EXPORT int qemu_plugin_version = QEMU_PLUGIN_API;

#define MAX_MARKS 8

struct insn {
    uint64_t addr;
    uint64_t size;
    uint64_t count; /* executions in the current segment */
    uint64_t taken; /* ... after which the next instruction was not the one following it in memory */
};

static struct insn **s_insns; /* every translated instruction, in translation order */
static size_t s_n_insns, s_cap_insns;
static FILE *s_out;
static uint64_t s_marks[MAX_MARKS];
static int s_n_marks;

static void flush(void)
{
    for (size_t i = 0; i < s_n_insns; i++) {
        struct insn *in = s_insns[i];
        if (in->count != 0 || in->taken != 0) {
            fprintf(s_out, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", in->addr, in->count, in->taken);
            in->count = 0;
            in->taken = 0;
        }
    }
}

static struct insn *s_prev; /* the instruction executed last */

static void on_exec(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    struct insn *in = userdata;
    if (s_prev != NULL && s_prev->addr + s_prev->size != in->addr) {
        s_prev->taken++;
    }
    s_prev = in;
    in->count++;
}

static void on_mark(unsigned int vcpu_index, void *userdata)
{
    on_exec(vcpu_index, userdata);
    flush();
    fprintf(s_out, "R %" PRIx64 "\n", ((struct insn *)userdata)->addr);
}

static bool is_mark(uint64_t addr)
{
    for (int i = 0; i < s_n_marks; i++) {
        if (s_marks[i] == addr) {
            return true;
        }
    }
    return false;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        struct insn *in = calloc(1, sizeof *in);
        if (in == NULL) {
            abort();
        }
        in->addr = qemu_plugin_insn_vaddr(insn);
        in->size = qemu_plugin_insn_size(insn);
        if (s_n_insns == s_cap_insns) {
            s_cap_insns = s_cap_insns ? 2 * s_cap_insns : 4096;
            s_insns = realloc(s_insns, s_cap_insns * sizeof *s_insns);
            if (s_insns == NULL) {
                abort();
            }
        }
        s_insns[s_n_insns++] = in;
        qemu_plugin_register_vcpu_insn_exec_cb(insn, is_mark(in->addr) ? on_mark : on_exec, QEMU_PLUGIN_CB_NO_REGS,
                                               in);
    }
}

static void on_atexit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    flush();
    fputs("E\n", s_out);
    fclose(s_out);
}

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    const char *out = NULL;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "out=", 4) == 0) {
            out = arg + 4;
        } else if (strncmp(arg, "mark=", 5) == 0 && s_n_marks < MAX_MARKS) {
            s_marks[s_n_marks++] = strtoull(arg + 5, NULL, 0);
        } else {
            fprintf(stderr, "insn_mix: unknown argument %s\n", arg);
            return 1;
        }
    }
    if (out == NULL || s_n_marks == 0) {
        fputs("insn_mix: needs out=FILE and mark=ADDR\n", stderr);
        return 1;
    }
    s_out = fopen(out, "w");
    if (s_out == NULL) {
        perror(out);
        return 1;
    }
    setvbuf(s_out, NULL, _IOFBF, 1 << 16);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
    return 0;
}
