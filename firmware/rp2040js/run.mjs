// rip's runner of RP2040 firmware on rp2040js (rip.firmware.rp2040_emulator starts it).
//
//   node run.mjs --uf2 FILE --bootrom FILE [--clock-hz 125000000] [--max-cycles N]
//                [--max-wall-seconds S]
//
// Loads the boot ROM and the UF2's RP2040 blocks into flash, starts core 0 at the start of
// flash (the second-stage boot loader, as the boot ROM would), and serves the firmware's
// UART0 and its USB CDC serial port on two TCP sockets, each the raw byte stream a serial
// cable would carry. Emulation starts once both sockets are connected (QEMU's
// server=on,wait=on) and ends at the first of: the cycle bound, the wall-time bound, a BKPT
// (the SDK's hard-fault handler is one), a core asleep with no timer to wake it, the reader
// hanging up, or stdin closing (the parent went away). stdout carries one JSON object per
// line: {"listen": {...}} first, then {"end": reason, ...}, or {"error": message}.

import { readFileSync } from 'node:fs';
import net from 'node:net';
import { parseArgs } from 'node:util';

import { RP2040, USBCDC } from 'rp2040js';

const FLASH_START = 0x10000000;
const BOOTROM_BYTES = 16384;
const UF2_MAGIC = [0x0a324655, 0x9e5d5157];
const UF2_MAGIC_END = 0x0ab16f30;
const UF2_FAMILY_PRESENT = 0x2000;
const RP2040_FAMILY = 0xe48bff56;
const SLICE_CYCLES = 2_000_000; // emulated cycles between two looks at sockets and bounds
const CONNECT_MS = 30_000;

function say(record) {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

function fail(message) {
  say({ error: message });
  process.exit(2);
}

/** The RP2040 blocks of a UF2 file as [flash offset, payload] pairs. */
function uf2Blocks(bytes, path) {
  if (bytes.length === 0 || bytes.length % 512 !== 0) {
    fail(`${path}: not a UF2 file (${bytes.length} B is not a whole number of 512 B blocks)`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const blocks = [];
  const families = new Set();
  for (let at = 0; at < bytes.length; at += 512) {
    const word = (i) => view.getUint32(at + i, true);
    if (word(0) !== UF2_MAGIC[0] || word(4) !== UF2_MAGIC[1] || word(508) !== UF2_MAGIC_END) {
      fail(`${path}: block ${at / 512} has a bad UF2 magic number`);
    }
    const family = word(8) & UF2_FAMILY_PRESENT ? word(28) : null;
    families.add(family === null ? 'none' : `0x${family.toString(16)}`);
    if (family !== RP2040_FAMILY) {
      continue; // another chip's block (an RP2350 image's errata block, say)
    }
    const address = word(12);
    const size = word(16);
    if (size > 476) {
      fail(`${path}: block ${at / 512} claims a ${size} B payload (at most 476)`);
    }
    blocks.push([address - FLASH_START, bytes.subarray(at + 32, at + 32 + size), at / 512]);
  }
  if (blocks.length === 0) {
    fail(`${path}: no RP2040 block (family ${[...families].join(', ')}); rp2040js runs RP2040 images only`);
  }
  return blocks;
}

function load(mcu, args) {
  let bootrom;
  let uf2;
  try {
    bootrom = readFileSync(args.bootrom);
    uf2 = readFileSync(args.uf2);
  } catch (e) {
    fail(`cannot read ${e.path}: ${e.code}`);
  }
  if (bootrom.length !== BOOTROM_BYTES) {
    fail(`${args.bootrom}: ${bootrom.length} B; the RP2040 boot ROM is ${BOOTROM_BYTES} B`);
  }
  const words = new Uint32Array(BOOTROM_BYTES / 4);
  new Uint8Array(words.buffer).set(bootrom);
  mcu.loadBootrom(words); // resets the chip, which erases flash: load the image after it
  for (const [offset, payload, index] of uf2Blocks(uf2, args.uf2)) {
    if (offset < 0 || offset + payload.length > mcu.flash.length) {
      fail(`${args.uf2}: block ${index} targets 0x${(offset + FLASH_START).toString(16)}, outside flash`);
    }
    mcu.flash.set(payload, offset);
  }
  mcu.core.PC = FLASH_START;
}

/** rp2040js's warnings and errors on stderr, the first few of them (its console logger
 * writes to stdout, which carries our records, and notes every unmodelled register). */
function quietLogger(limit = 20) {
  let count = 0;
  const log = (level) => (component, message) => {
    if (++count <= limit) process.stderr.write(`rp2040js ${level} [${component}] ${message}\n`);
  };
  return { debug() {}, info() {}, warn: log('warning'), error: log('error') };
}

/** A TCP server for one serial stream; resolves to the connected socket. */
function serve(name, ports) {
  return new Promise((resolve) => {
    const server = net.createServer({ noDelay: true }, (socket) => {
      server.close();
      resolve(socket);
    });
    server.listen(0, '127.0.0.1', () => {
      ports[name] = server.address().port;
    });
  });
}

async function main() {
  const { values: args } = parseArgs({
    options: {
      uf2: { type: 'string' },
      bootrom: { type: 'string' },
      'clock-hz': { type: 'string', default: '125000000' },
      'max-cycles': { type: 'string', default: '12500000000' },
      'max-wall-seconds': { type: 'string', default: '600' },
    },
  });
  if (!args.uf2 || !args.bootrom) {
    fail('usage: node run.mjs --uf2 FILE --bootrom FILE [--clock-hz HZ] [--max-cycles N] [--max-wall-seconds S]');
  }
  const positive = (name) => {
    const value = Number(args[name]);
    if (!Number.isFinite(value) || value <= 0) fail(`--${name} ${args[name]}: not a positive number`);
    return value;
  };
  const clockHz = positive('clock-hz');
  const maxCycles = positive('max-cycles');
  const maxWallMs = positive('max-wall-seconds') * 1000;
  const mcu = new RP2040(); // on rp2040js's SimulationClock, which the loop below ticks
  const { clock } = mcu;
  mcu.logger = quietLogger();
  load(mcu, args);

  // Serial output is batched per slice: one socket write per stream per slice.
  const pending = { uart: [], usb: [] };
  mcu.uart[0].onByte = (value) => pending.uart.push(value);
  const cdc = new USBCDC(mcu.usbCtrl);
  cdc.onSerialData = (buffer) => {
    for (const value of buffer) pending.usb.push(value);
  };
  // The host sends nothing. rp2040js's CDC helper answers every OUT transfer the device
  // arms at once with zero bytes, an interrupt every few microseconds that a real host,
  // which NAKs in the USB controller without bothering the CPU, never causes.
  mcu.usbCtrl.onEndpointRead = () => {};

  let stopped = null;
  const stop = (reason, extra = {}) => {
    if (!stopped) stopped = { reason, ...extra };
  };
  mcu.onBreak = (code) => stop('breakpoint', { code });
  process.stdin.on('end', () => stop('stdin closed'));
  process.stdin.resume();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1)));
  }

  const ports = {};
  const connecting = Promise.all([serve('uart', ports), serve('usb', ports)]);
  await new Promise((resolve) => setImmediate(resolve)); // both listening
  say({ listen: ports });
  const timer = setTimeout(() => fail(`no reader connected within ${CONNECT_MS / 1000} s`), CONNECT_MS);
  const [uart, usb] = await connecting;
  clearTimeout(timer);
  const sockets = { uart, usb };
  for (const [name, socket] of Object.entries(sockets)) {
    socket.on('error', () => stop(`${name} reader hung up`));
    socket.on('close', () => stop(`${name} reader hung up`));
  }
  // What the reader sends on the UART socket reaches UART0's receive FIFO, one byte
  // whenever the FIFO has room (rp2040js drops a byte pushed into a full FIFO; a real UART
  // at 115200 baud delivers a byte every 87 us, far slower than any reader drains it).
  const rx = { bytes: [], next: 0 };
  uart.on('data', (buffer) => {
    for (const value of buffer) rx.bytes.push(value);
  });
  const uart0 = mcu.uart[0];

  const cycleNanos = 1e9 / clockHz;
  const { core } = mcu;
  const t0 = Date.now();
  const flush = () => {
    for (const [name, bytes] of Object.entries(pending)) {
      if (bytes.length) {
        sockets[name].write(Uint8Array.from(bytes));
        bytes.length = 0;
      }
    }
  };
  const finish = () => {
    flush();
    say({
      end: stopped.reason,
      ...stopped,
      reason: undefined,
      core_cycles: core.cycles,
      emulated_seconds: clock.nanos / 1e9,
      pc: `0x${(core.PC >>> 0).toString(16)}`,
      wall_seconds: (Date.now() - t0) / 1000,
    });
    let open = 2;
    for (const socket of Object.values(sockets)) {
      socket.end(() => --open === 0 && process.exit(0));
    }
    setTimeout(() => process.exit(0), 2000).unref();
  };

  const slice = () => {
    const end = clock.nanos + SLICE_CYCLES * cycleNanos;
    while (!stopped && clock.nanos < end) {
      if (rx.next < rx.bytes.length && !uart0.rxFIFO.full) uart0.feedByte(rx.bytes[rx.next++]);
      if (core.waiting) {
        const nanos = clock.nanosToNextAlarm;
        clock.tick(nanos > 0 ? nanos : 0);
        if (nanos <= 0 && core.waiting && clock.nanosToNextAlarm <= 0) {
          stop('asleep with nothing to wake it');
        }
      } else {
        clock.tick(core.executeInstruction() * cycleNanos);
      }
    }
    flush();
    if (!stopped && clock.nanos >= maxCycles * cycleNanos) stop('cycle bound', { max_cycles: maxCycles });
    if (!stopped && Date.now() - t0 > maxWallMs) stop('wall-time bound', { max_wall_seconds: maxWallMs / 1000 });
    if (stopped) finish();
    else setImmediate(slice); // lets the sockets drain and stdin/signals be seen
  };
  slice();
}

main().catch((e) => fail(`${e?.stack ?? e}`));
