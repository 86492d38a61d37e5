/* accelerate-rs: the CUDA C emulator's scheduler, put after a generated
 * CUDA C file (Note [The CUDA emulator] in backend/cuda/emulate.rs).
 *
 * `acc_emu_launch` runs a kernel's grid one block at a time, in the
 * order of the blocks' numbers; a block's ACC_BLOCK threads are fibers
 * (ucontext) on the calling thread. The scheduler switches to each
 * unfinished thread in turn; a thread runs until it finishes or waits at
 * a barrier, whose waiting threads go on once every thread of its group
 * (the block, or the warp) has arrived. A round in which no thread
 * finished and no barrier opened, while threads are left, is a deadlock
 * (a barrier some thread of the group never reaches): the launch stops
 * and says so. Running blocks in order is one of the schedules a device
 * may choose; kernels that are correct on a device are correct under it
 * (a block never waits for a later block: decoupled look-back waits only
 * for earlier tiles).
 */

#include <stdlib.h>
#include <ucontext.h>

static_assert(ACC_BLOCK <= 1024, "the emulator's shuffle words hold 1024 threads");

/* Bytes of stack per emulated thread. */
#define ACC_EMU_STACK (256 * 1024)

struct acc_emu_barrier {
    int arrived;
    unsigned generation;
};

struct acc_emu_state {
    ucontext_t scheduler;
    ucontext_t thread[ACC_BLOCK];
    char *stacks;
    int finished[ACC_BLOCK];
    int running;
    unsigned long progress;
    acc_emu_barrier block;
    acc_emu_barrier warp[ACC_WARPS];
    void (*kernel)(const acc_args);
    const acc_args *args;
};

static acc_emu_state *acc_emu;

static void acc_emu_wait(acc_emu_barrier *b, int count) {
    const unsigned g = b->generation;
    if (++b->arrived == count) {
        b->arrived = 0;
        b->generation++;
        acc_emu->progress++;
        return;
    }
    while (b->generation == g) {
        const unsigned t = threadIdx.x;
        swapcontext(&acc_emu->thread[t], &acc_emu->scheduler);
    }
}

static void acc_emu_sync_block() { acc_emu_wait(&acc_emu->block, ACC_BLOCK); }
static void acc_emu_sync_warp() { acc_emu_wait(&acc_emu->warp[threadIdx.x >> 5], 32); }

static void acc_emu_thread() {
    acc_emu->kernel(*acc_emu->args);
    acc_emu->finished[threadIdx.x] = 1;
    acc_emu->progress++;
    /* returns to the scheduler (uc_link) */
}

/* Runs `kernel` on a grid of `grid` blocks of ACC_BLOCK threads: 0 when
 * every thread finished, 1 on a deadlock, 2 when the emulator's memory
 * cannot be had. */
extern "C" int acc_emu_launch(void (*kernel)(const acc_args), const acc_args *args, unsigned grid) {
    acc_emu_state *s = (acc_emu_state *)calloc(1, sizeof(acc_emu_state));
    if (!s)
        return 2;
    s->stacks = (char *)malloc((size_t)ACC_BLOCK * ACC_EMU_STACK);
    if (!s->stacks) {
        free(s);
        return 2;
    }
    s->kernel = kernel;
    s->args = args;
    acc_emu = s;
    gridDim.x = grid;
    gridDim.y = gridDim.z = 1;
    blockDim.x = ACC_BLOCK;
    blockDim.y = blockDim.z = 1;
    int status = 0;
    for (unsigned b = 0; b < grid && status == 0; b++) {
        blockIdx.x = b;
        blockIdx.y = blockIdx.z = 0;
        memset(&s->block, 0, sizeof s->block);
        memset(s->warp, 0, sizeof s->warp);
        for (int t = 0; t < ACC_BLOCK; t++) {
            getcontext(&s->thread[t]);
            s->thread[t].uc_stack.ss_sp = s->stacks + (size_t)t * ACC_EMU_STACK;
            s->thread[t].uc_stack.ss_size = ACC_EMU_STACK;
            s->thread[t].uc_link = &s->scheduler;
            makecontext(&s->thread[t], acc_emu_thread, 0);
            s->finished[t] = 0;
        }
        int left = ACC_BLOCK;
        while (left > 0) {
            const unsigned long before = s->progress;
            for (int t = 0; t < ACC_BLOCK; t++) {
                if (s->finished[t])
                    continue;
                threadIdx.x = (unsigned)t;
                threadIdx.y = threadIdx.z = 0;
                swapcontext(&s->scheduler, &s->thread[t]);
            }
            left = 0;
            for (int t = 0; t < ACC_BLOCK; t++)
                left += !s->finished[t];
            if (left > 0 && s->progress == before) {
                status = 1;
                break;
            }
        }
    }
    acc_emu = 0;
    free(s->stacks);
    free(s);
    return status;
}
