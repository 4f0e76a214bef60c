/* The GPU helper's entry point. The toolchain's crt1.o calls the newest
   __libc_start_main (GLIBC_2.34); this one calls the baseline's, so that the
   helper starts on old glibc too. No init/fini: the helper has no
   constructors. */
#if defined(__x86_64__)
        .text
        .globl _start
        .type _start, @function
_start:
        xor %ebp, %ebp
        mov %rdx, %r9                /* rtld_fini from the dynamic loader */
        pop %rsi                     /* argc */
        mov %rsp, %rdx               /* argv */
        and $-16, %rsp
        push %rax
        push %rsp                    /* stack_end */
        xor %r8d, %r8d               /* fini */
        xor %ecx, %ecx               /* init */
        mov main@GOTPCREL(%rip), %rdi
        call *__libc_start_main_base@GOTPCREL(%rip)
        hlt
        .symver __libc_start_main_base, __libc_start_main@GLIBC_2.2.5
#elif defined(__aarch64__)
        .text
        .globl _start
        .type _start, %function
_start:
        mov x29, #0
        mov x30, #0
        mov x5, x0                   /* rtld_fini */
        ldr x1, [sp]                 /* argc */
        add x2, sp, #8               /* argv */
        mov x6, sp                   /* stack_end */
        mov x3, #0                   /* init */
        mov x4, #0                   /* fini */
        adrp x0, :got:main
        ldr x0, [x0, #:got_lo12:main]
        bl __libc_start_main_base
        brk #0
        .symver __libc_start_main_base, __libc_start_main@GLIBC_2.17
#endif
        .section .note.GNU-stack, "", %progbits
