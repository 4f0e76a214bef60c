/* The GPU helper's executable, carried inside the agent as bytes
   (agent/gpu_helper_process.h writes it out and runs it). */
        .section .rodata
        .balign 16
        .globl dlaunch_gpu_helper_start
        .globl dlaunch_gpu_helper_end
dlaunch_gpu_helper_start:
        .incbin DLAUNCH_GPU_HELPER_PATH
dlaunch_gpu_helper_end:
        .section .note.GNU-stack, "", %progbits
