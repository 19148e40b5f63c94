/* A firmware of known instruction mix for tests/test_timing.py: between two calls of
 * rip_systick_ticks (the timing plugin's segment marker) it runs a fixed sequence whose
 * cycles the test adds up by hand from the cost tables of docs/pico-timing.md, then prints
 * RIP-DONE on the CMSDK UART and exits through semihosting.
 *
 * Built with -mcpu=cortex-m0plus (ARMv6-M) or -mcpu=cortex-m33 (adds a Thumb-2 part);
 * -DUART_BASE=<the board's UART0>. MIX=1: the instruction mix; MIX=0: the cache pattern
 * (ARRAY_BYTES of flash data read word by word, PASSES times). */
    .syntax unified
    .thumb

    .section .vectors, "a"
    .word __stack_top
    .word rip_reset_handler + 1

    .text
    .type rip_systick_ticks, %function
    .global rip_systick_ticks
rip_systick_ticks:
    bx lr
    .size rip_systick_ticks, . - rip_systick_ticks

    .type __divsi3, %function
    .global __divsi3
    .balign 4
__divsi3:                 /* stands in for libgcc's: charged as the SIO-divider routine */
    movs r0, #1
    movs r0, #2
    movs r0, #3
    bx lr
    .size __divsi3, . - __divsi3

    .type func, %function
func:
    push {r4, lr}
    pop {r4, pc}
    .size func, . - func

    .type rip_reset_handler, %function
    .global rip_reset_handler
    .balign 4
rip_reset_handler:
#if MIX
    ldr r7, =table
    movs r6, #0
    bl rip_systick_ticks      /* segment 1 starts in there */
    movs r0, #5
    adds r0, #3
    muls r0, r0, r0
    ldr r1, =table
    ldr r2, [r1]
    ldrb r3, [r1, #1]
    sub sp, #8
    str r2, [sp]
    ldr r3, [sp]
    add sp, #8
    push {r4, r5, lr}
    pop {r4, r5}
    pop {r3}
    movs r4, #3
1:  subs r4, #1
    bne 1b
    bl func
    b 2f
    nop
2:  ldm r1!, {r2, r3}
#if __ARM_ARCH_8M_MAIN__
    movs r0, #7
    movs r1, #2
    sdiv r2, r0, r1
    umull r2, r3, r0, r1
    smlad r2, r0, r1, r2
    cmp r0, #7
    it eq
    ldreq r2, [r7]
    it ne
    ldrne r2, [r7]
#else
    bl __divsi3
#endif
    bl rip_systick_ticks      /* segment 2 starts in there */
#else
    ldr r5, =array
    ldr r6, =array + ARRAY_BYTES
    movs r4, #PASSES
    bl rip_systick_ticks
3:  mov r2, r5
4:  ldr r3, [r2]
    adds r2, #4
    cmp r2, r6
    bne 4b
    subs r4, #1
    bne 3b
    bl rip_systick_ticks
#endif
    ldr r0, =UART_BASE
    movs r1, #16
    str r1, [r0, #0x10]       /* BAUDDIV */
    movs r1, #1
    str r1, [r0, #8]          /* CTRL: transmit */
    adr r2, message
5:  ldrb r1, [r2]
    cmp r1, #0
    beq 7f
6:  ldr r3, [r0, #4]          /* STATE: wait while the transmitter is full */
    lsls r3, r3, #31
    bne 6b
    str r1, [r0]
    adds r2, #1
    b 5b
7:  movs r0, #0x18            /* SYS_EXIT, ADP_Stopped_ApplicationExit */
    ldr r1, =0x20026
    bkpt 0xab
    .balign 4
message:
    .asciz "RIP-DONE\n"
    .balign 4
    .ltorg
    .size rip_reset_handler, . - rip_reset_handler

    .section .rodata
    .balign 8
table:
    .word 0x11223344, 0x55667788, 0x99aabbcc, 0xddeeff00
#if !MIX
    .balign 8
array:
    .space ARRAY_BYTES
#endif
