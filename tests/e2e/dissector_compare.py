#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""dissector_compare.py - the Wireshark dissector (tools/wireshark/falcon.lua) against the
project's own decoders (falcon-dump), field by field, on one pcap file.

  dissector_compare.py --lua FILE --dump FALCON_DUMP --pcap FILE --port N [--port M]
                       [--expect FILE] [--min NAME=COUNT]... [--allow-chat] [--trim]

Every field the dissector registers under falcon_psp., falcon. and falcon_rdma. is asked
of tshark (-T fields), except the reserved bits (the decoders ignore them) and the raw
byte blobs of payloads (compared through their lengths). For each frame:
  - falcon-dump's fields and tshark's non-empty fields must be the same set with the same
    values (integers compared as numbers, byte strings as hex, error codes as text);
  - without --expect: tshark must raise no expert info above chat (with --allow-chat, the
    "encrypted" chat note is the only one allowed) and mark nothing malformed;
  - with --expect (lines "N ok what", "N FIELD=ECODE what" or "N any what" from
    falcon-dump forge): an "ok" frame as above; a malformed frame must carry FIELD=ECODE
    in falcon-dump's output and in tshark's, and an expert error; the fields falcon-dump
    printed before its error must match tshark's. An "any" frame (a random mutant) is
    malformed in this way if falcon-dump finds an error, else it must decode equal with
    no expert error (a warning for reserved bits set is allowed).
Prints the packets per Falcon type and per RDMA opcode, then "dissector-compare: N passed,
N failed" (N = frames) and exits 1 on any failure. --min TYPE=COUNT (a Falcon packet type
name as printed, e.g. EACK=1000) fails when fewer such packets were compared. --trim
first cuts the file after its last whole record (a capture stopped by a signal may end
inside one).
"""
import argparse
import collections
import struct
import subprocess
import sys

PKT_TYPES = {0: "Pull Request", 3: "Pull Data", 5: "Push Data", 6: "Resync", 8: "NACK",
             9: "BACK", 10: "EACK"}
PREFIXES = ("falcon_psp.", "falcon.", "falcon_rdma.")
# byte blobs not compared: their lengths are (payload_len, encrypted_len, pad)
BLOBS = {"falcon.payload", "falcon_rdma.payload", "falcon_psp.encrypted",
         "falcon_rdma.pad_bytes"}
# reserved bits: shown by the dissector (with a warning when set), ignored by the decoders
RESERVED = {"falcon.w1_r", "falcon_rdma.r"}
SEV_WARN = 0x600000
SEV_ERROR = 0x800000


def tshark_fields(lua):
    """(name, type) of every field the dissector registers that is compared."""
    out = subprocess.run(["tshark", "-G", "fields", "-X", "lua_script:" + lua],
                         capture_output=True, text=True, check=True).stdout
    fields, skipped = [], []
    for line in out.splitlines():
        col = line.split("\t")
        if len(col) < 4 or col[0] != "F" or not col[2].startswith(PREFIXES):
            continue
        name, ftype = col[2], col[3]
        if ftype == "FT_NONE" or ".expert." in name:
            continue
        if name in BLOBS or name in RESERVED or "reserved" in name:
            skipped.append(name)
            continue
        fields.append((name, ftype))
    return fields, skipped


def norm(ftype, value):
    if ftype.startswith(("FT_UINT", "FT_INT")):
        return int(value, 0)
    if ftype == "FT_BYTES":
        return value.replace(":", "").lower()
    return value


def run_tshark(args, fields):
    cmd = ["tshark", "-n", "-r", args.pcap, "-X", "lua_script:" + args.lua,
           "-o", "falcon.udp_ports:" + ",".join(str(p) for p in args.port), "-T", "fields",
           "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|",
           "-e", "frame.number", "-e", "_ws.expert.severity", "-e", "_ws.malformed",
           "-e", "_ws.expert.message"]
    for name, _ in fields:
        cmd += ["-e", name]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit("tshark failed (%d): %s" % (res.returncode, res.stderr.strip()[-2000:]))
    rows = {}
    for line in res.stdout.splitlines():
        col = line.split("\t")
        rows[int(col[0])] = col
    return rows, res.stderr


def run_dump(args):
    cmd = [args.dump]
    for p in args.port:
        cmd += ["-p", str(p)]
    cmd.append(args.pcap)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    frames = {}
    for line in out.splitlines():
        kv = dict(item.split("=", 1) for item in line.split())
        frames[int(kv.pop("frame"))] = kv
    return frames


def trim(path):
    """Cut a pcap file after its last whole record; returns the records kept."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        sys.exit("%s: not a pcap file" % path)
    endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    off, n = 24, 0
    while off + 16 <= len(data):
        caplen = struct.unpack_from(endian + "I", data, off + 8)[0]
        if off + 16 + caplen > len(data):
            break
        off += 16 + caplen
        n += 1
    if off != len(data):
        with open(path, "r+b") as f:
            f.truncate(off)
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lua", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--port", type=int, action="append", required=True)
    ap.add_argument("--expect")
    ap.add_argument("--min", action="append", default=[])
    ap.add_argument("--allow-chat", action="store_true")
    ap.add_argument("--trim", action="store_true")
    args = ap.parse_args()

    if args.trim:
        print("%s: %d records" % (args.pcap, trim(args.pcap)))

    fields, skipped = tshark_fields(args.lua)
    if len(fields) < 80:
        sys.exit("only %d dissector fields found: is the Lua file loaded?" % len(fields))
    ftype = dict(fields)
    print("comparing %d fields (not compared: %s)" % (len(fields), " ".join(sorted(skipped))))
    ts, ts_err = run_tshark(args, fields)
    dump = run_dump(args)
    expect = {}
    if args.expect:
        for line in open(args.expect):
            n, what = line.split(" ", 1)
            expect[int(n)] = what.split(" ", 1)[0]

    passed = failed = 0
    per_type, per_op = collections.Counter(), collections.Counter()
    shown = 0

    def bad(frame, msg):
        nonlocal shown
        if shown < 30:
            print("frame %d: %s" % (frame, msg))
        shown += 1

    frames = sorted(set(dump) | {n for n, c in ts.items()
                                 if any(v for v in c[4:])})
    if args.expect:  # a mutant cut to an empty datagram reaches no dissector
        missing = [n for n, e in expect.items() if e != "any" and n not in frames]
        extra = [n for n in frames if n not in expect]
        if missing or extra:
            print("forged frames not decoded: %s; decoded frames not forged: %s" %
                  (missing[:20], extra[:20]))
            failed += 1
    for n in frames:
        d = dump.get(n)
        col = ts.get(n)
        if d is None or col is None:
            bad(n, "only in %s" % ("tshark" if d is None else "falcon-dump"))
            failed += 1
            continue
        sev = [int(s) for s in col[1].split("|") if s]
        malformed = col[2] != ""
        msgs = col[3]
        got = {}
        for (name, t), v in zip(fields, col[4:]):
            if v != "":
                got[name] = v
        problems = []
        want_err = expect.get(n, "ok") if args.expect else "ok"
        if want_err == "any":  # a mutant: the decoders' verdict, whatever it is
            errs = sorted(k for k in d if k.endswith(".error"))
            want_err = "%s=%s" % (errs[0], d[errs[0]]) if errs else "some"
        if want_err == "some":  # well-formed, reserved bits may be set: no error
            if malformed or "Lua Error" in msgs or max(sev, default=0) >= SEV_ERROR:
                problems.append("expert info: %s" % msgs)
            keys = set(d) | set(got)
        elif want_err == "ok":
            top = max(sev, default=0)
            if malformed or "Lua Error" in msgs or top >= SEV_WARN or \
                    (top and not args.allow_chat):
                problems.append("expert info: %s" % msgs)
            keys = set(d) | set(got)
        else:
            ename, ecode = want_err.split("=")
            if d.get(ename) != ecode:
                problems.append("falcon-dump says %s, the forge meant %s" %
                                (d.get(ename), want_err))
            if got.get(ename) != ecode:
                problems.append("tshark says %s=%s, not %s" % (ename, got.get(ename), ecode))
            if max(sev, default=0) < SEV_ERROR or "Lua Error" in msgs:
                problems.append("no expert error: %s" % msgs)
            keys = set(d)  # the dissector shows more of a broken layer than the decoder
        for k in sorted(keys):
            if k not in ftype:
                problems.append("%s: not a dissector field" % k)
                continue
            if k not in d or k not in got:
                problems.append("%s only in %s (%s)" % (
                    k, "tshark" if k not in d else "falcon-dump", got.get(k, d.get(k))))
                continue
            try:
                same = norm(ftype[k], got[k]) == norm(ftype[k], d[k])
            except ValueError:
                same = False
            if not same:
                problems.append("%s: tshark %s, falcon-dump %s" % (k, got[k], d[k]))
        if problems:
            bad(n, "; ".join(problems))
            failed += 1
            continue
        passed += 1
        if "falcon.pkt_type" in d:
            per_type[PKT_TYPES.get(int(d["falcon.pkt_type"]), "?")] += 1
        elif "falcon_psp.encrypted_len" in d:
            per_type["encrypted"] += 1
        else:
            per_type["malformed"] += 1
        if "falcon_rdma.opcode" in d:
            per_op[int(d["falcon_rdma.opcode"])] += 1

    print("packets compared per Falcon type:")
    for name, cnt in sorted(per_type.items(), key=lambda x: -x[1]):
        print("  %-14s %7d" % (name, cnt))
    print("RDMA opcodes: " + " ".join("0x%02x:%d" % (op, c) for op, c in sorted(per_op.items())))
    for m in args.min:
        name, cnt = m.rsplit("=", 1)
        if per_type[name] < int(cnt):
            print("too few %s packets: %d < %s" % (name, per_type[name], cnt))
            failed += 1
    if not frames:
        print("no Falcon frame in %s" % args.pcap)
        failed += 1
    print("dissector-compare: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
