/* accelerate-rs: the CUDA C emulator's scheduler, put after a generated
 * CUDA C file (Note [The CUDA emulator] in backend/cuda/emulate.rs).
 *
 * `acc_emu_launch` runs a kernel's grid one block at a time, in the
 * order of the blocks' numbers; a block's ACC_BLOCK threads are fibers on
 * the calling thread, each with its own stack. The scheduler switches to
 * each unfinished thread in turn, skipping those whose barrier has not
 * opened; a thread runs until it finishes or waits at a barrier, which
 * opens once every thread of its group (the block, or the warp) has
 * arrived. A round in which no thread
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

/* The x86-64 switch needs a 16-byte aligned stack top: the caller's
 * stacks start aligned and each is a multiple of 16 bytes. */


struct acc_emu_barrier {
    int arrived;
    unsigned generation;
};

/* Switching between the scheduler and a thread. On x86-64, a switch saves
 * the callee-saved registers on the stack it leaves and the stack pointer
 * in `from`, and resumes `to` (as coroutine libraries do); elsewhere it is
 * swapcontext, which also saves the signal mask, a system call each way
 * (most of the emulator's time before this). */
#if defined(__x86_64__)
__attribute__((naked, noinline)) static void acc_emu_switch(void **from, void *to) {
    __asm__ volatile("pushq %rbp\n\t"
                     "pushq %rbx\n\t"
                     "pushq %r12\n\t"
                     "pushq %r13\n\t"
                     "pushq %r14\n\t"
                     "pushq %r15\n\t"
                     "movq %rsp, (%rdi)\n\t"
                     "movq %rsi, %rsp\n\t"
                     "popq %r15\n\t"
                     "popq %r14\n\t"
                     "popq %r13\n\t"
                     "popq %r12\n\t"
                     "popq %rbx\n\t"
                     "popq %rbp\n\t"
                     "ret\n\t");
}
typedef void *acc_emu_context;
#else
typedef ucontext_t acc_emu_context;
#endif

struct acc_emu_state {
    acc_emu_context scheduler;
    acc_emu_context thread[ACC_BLOCK];
    char *stacks;
    size_t stack_bytes;
    int finished[ACC_BLOCK];
    /* The barrier a thread waits at, and its generation then: the
     * scheduler resumes the thread only once the barrier has opened. */
    acc_emu_barrier *waits_at[ACC_BLOCK];
    unsigned waits_for[ACC_BLOCK];
    unsigned long progress;
    acc_emu_barrier block;
    acc_emu_barrier warp[ACC_WARPS];
    void (*kernel)(const acc_args);
    const acc_args *args;
};

static acc_emu_state *acc_emu;

static void acc_emu_to_scheduler(int t) {
#if defined(__x86_64__)
    acc_emu_switch(&acc_emu->thread[t], acc_emu->scheduler);
#else
    swapcontext(&acc_emu->thread[t], &acc_emu->scheduler);
#endif
}

static void acc_emu_to_thread(int t) {
#if defined(__x86_64__)
    acc_emu_switch(&acc_emu->scheduler, acc_emu->thread[t]);
#else
    swapcontext(&acc_emu->scheduler, &acc_emu->thread[t]);
#endif
}

static void acc_emu_wait(acc_emu_barrier *b, int count) {
    const unsigned g = b->generation;
    if (++b->arrived == count) {
        b->arrived = 0;
        b->generation++;
        acc_emu->progress++;
        return;
    }
    const int t = (int)threadIdx.x;
    acc_emu->waits_at[t] = b;
    acc_emu->waits_for[t] = g;
    while (b->generation == g)
        acc_emu_to_scheduler(t);
    acc_emu->waits_at[t] = 0;
}

static void acc_emu_sync_block() { acc_emu_wait(&acc_emu->block, ACC_BLOCK); }
static void acc_emu_sync_warp() { acc_emu_wait(&acc_emu->warp[threadIdx.x >> 5], 32); }

/* A thread's life: the kernel, then back to the scheduler for good. */
static void acc_emu_thread() {
    acc_emu->kernel(*acc_emu->args);
    const int t = (int)threadIdx.x;
    acc_emu->finished[t] = 1;
    acc_emu->progress++;
    acc_emu_to_scheduler(t);
    abort(); /* a finished thread is never resumed */
}

/* Sets up thread `t` to start in acc_emu_thread on its own stack. */
static void acc_emu_start(acc_emu_state *s, int t) {
    char *stack = s->stacks + (size_t)t * s->stack_bytes;
#if defined(__x86_64__)
    /* what acc_emu_switch pops: six registers, then the address it
     * returns to; above it a null return address for acc_emu_thread, so
     * that the stack is aligned as after a call */
    void **top = (void **)(stack + s->stack_bytes);
    *--top = 0;
    *--top = (void *)acc_emu_thread;
    for (int r = 0; r < 6; r++)
        *--top = 0;
    s->thread[t] = top;
#else
    getcontext(&s->thread[t]);
    s->thread[t].uc_stack.ss_sp = stack;
    s->thread[t].uc_stack.ss_size = s->stack_bytes;
    s->thread[t].uc_link = &s->scheduler;
    makecontext(&s->thread[t], acc_emu_thread, 0);
#endif
}

/* Runs `kernel` on a grid of `grid` blocks of ACC_BLOCK threads, whose
 * stacks are the caller's `stacks` (ACC_BLOCK of `stack_bytes` each, a
 * multiple of 16, kept from launch to launch so that their pages are
 * mapped once): 0 when every thread finished, 1 on a deadlock, 2 when the
 * emulator's memory cannot be had. */
extern "C" int acc_emu_launch(void (*kernel)(const acc_args), const acc_args *args, unsigned grid, char *stacks,
                              size_t stack_bytes) {
    acc_emu_state *s = (acc_emu_state *)calloc(1, sizeof(acc_emu_state));
    if (!s)
        return 2;
    s->stacks = stacks;
    s->stack_bytes = stack_bytes;
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
            acc_emu_start(s, t);
            s->finished[t] = 0;
            s->waits_at[t] = 0;
        }
        int left = ACC_BLOCK;
        while (left > 0) {
            const unsigned long before = s->progress;
            for (int t = 0; t < ACC_BLOCK; t++) {
                if (s->finished[t])
                    continue;
                if (s->waits_at[t] && s->waits_at[t]->generation == s->waits_for[t])
                    continue; /* its barrier has not opened */
                threadIdx.x = (unsigned)t;
                threadIdx.y = threadIdx.z = 0;
                acc_emu_to_thread(t);
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
    free(s);
    return status;
}
