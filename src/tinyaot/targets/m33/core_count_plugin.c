/* A QEMU TCG plugin for two-core runs (QEMU mps2-an521): how many instructions each core (vCPU) executed, read
 * at marks.
 *
 * Built for the host by tinyaot.targets.m33.an521 and loaded with
 *   qemu-system-arm -M mps2-an521 -icount ... -plugin core_count.so,out=FILE,mark=ADDR[,mark=ADDR...]
 * Every executed instruction adds one to its vCPU's counter (an execution callback per translated instruction:
 * exact under -icount, as in insn_mix_plugin.c). When a vCPU executes the instruction at a mark address (the
 * harness's mark function), the plugin writes
 *   M <vcpu> <address hex> <instructions that vCPU executed so far, the mark's own included>
 * and at the end of the run one "T <vcpu> <total>" line per vCPU that ran, then "E". With -icount QEMU runs the
 * vCPUs one after another on one thread, so a run is deterministic.
 *
 * QEMU_PLUGIN_API: as in insn_mix_plugin.c (1 up to QEMU 8.x, 2 from 9.0). */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

EXPORT int qemu_plugin_version = QEMU_PLUGIN_API;

#define MAX_VCPUS 8
#define MAX_MARKS 8

static uint64_t s_count[MAX_VCPUS];
static FILE *s_out;
static uint64_t s_marks[MAX_MARKS];
static int s_n_marks;

static void on_exec(unsigned int vcpu_index, void *userdata)
{
    (void)userdata;
    s_count[vcpu_index % MAX_VCPUS]++;
}

static void on_mark(unsigned int vcpu_index, void *userdata)
{
    on_exec(vcpu_index, userdata);
    fprintf(s_out, "M %u %" PRIx64 " %" PRIu64 "\n", vcpu_index, (uint64_t)(uintptr_t)userdata,
            s_count[vcpu_index % MAX_VCPUS]);
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
        uint64_t addr = qemu_plugin_insn_vaddr(insn);
        qemu_plugin_register_vcpu_insn_exec_cb(insn, is_mark(addr) ? on_mark : on_exec, QEMU_PLUGIN_CB_NO_REGS,
                                               (void *)(uintptr_t)addr);
    }
}

static void on_atexit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    for (unsigned int v = 0; v < MAX_VCPUS; v++) {
        if (s_count[v] != 0) {
            fprintf(s_out, "T %u %" PRIu64 "\n", v, s_count[v]);
        }
    }
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
            fprintf(stderr, "core_count: unknown argument %s\n", arg);
            return 1;
        }
    }
    if (out == NULL) {
        fputs("core_count: needs out=FILE\n", stderr);
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
