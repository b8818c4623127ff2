#!/usr/bin/python3
"""kill -9 at random points during every PosLens writer: the output is the previous file or none,
never a half file (core/base/atomic_file.h, docs/hdf5-layout.md "Atomic writing",
docs/training.md "Atomic checkpoints").

Writers: `run` (HDF5 captures), `position-map` (HDF5), `heads` (HDF5), a figure (`position-map
--figure`, .png/.pdf/.svg in turn) and a training run's checkpoints (`train`). For each: one
uninterrupted run gives T_full and the "previous" output; then --kills times the same command is
started on the same output path, where the previous complete output exists (half of the kills)
or where there is none (the other half), SIGKILLed (its whole process group) after a seeded
uniform (0, 1.1 T_full) s, and the folder is checked:

- the output is absent (there was none), or the previous one untouched (same inode, same bytes),
  or a new complete one (the kill came after the rename, or the command had finished);
- complete means: HDF5 opens with h5py, every attribute and every dataset reads in full, with the
  previous file's layout (names, shapes, dtypes); PNG: signature, every chunk's CRC, IDAT inflates,
  IEND last; PDF: %PDF- header, %%EOF at the end, startxref pointing at the cross-reference; SVG:
  parses as XML with an <svg> root; a checkpoint: every file of a PosLens model folder plus
  optimizer.pt and trainer_state.json, JSON parsing, safetensors header and size agreeing,
  optimizer.pt a zip whose every member passes its CRC, and `poslens-cli info` exits 0;
- anything else beside the output is a temporary named `<output>.tmp-<pid>-<n>` (a checkpoint:
  `step-N.tmp-<pid>-<n>/`), which the docs allow after a crash; they are counted and removed.

Run with Debian's python (h5py, numpy):
  nice -n 10 /usr/bin/python3 tests/crash/kill_writers.py --cli build/app/cli/poslens-cli
Exit status 1 when any half or invalid output is seen (or a baseline run fails), else 0.
"""

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
import zlib

import h5py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Long enough for `run` (~340 tokens) and `position-map` (~230) to stream their HDF5 file for a
# good part of their time (0.5-1 s on an idle 2-core machine); the others need little.
STORY = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the "
         "park. One day, she saw a big red ball under a tree and ran to get it. ")
LONG_TEXT = " ".join([STORY] * 6)
MEDIUM_TEXT = " ".join([STORY] * 4)
SHORT_TEXT = STORY


class Failure(Exception):
    """A half or invalid output: the thing this test exists to find."""


# --------------------------------------------------------------------------- file validators

def check_hdf5(path, layout=None):
    """Opens `path` with h5py, reads every attribute and dataset in full; returns its layout."""
    found = {}
    try:
        with h5py.File(path, "r") as f:
            def visit(name, obj):
                for key in obj.attrs:
                    obj.attrs[key]
                if isinstance(obj, h5py.Dataset):
                    obj[()]
                    found[name] = (tuple(obj.shape), str(obj.dtype))
                else:
                    found[name] = ("group",)
            for key in f.attrs:
                f.attrs[key]
            f.visititems(visit)
    except Failure:
        raise
    except Exception as e:  # noqa: BLE001 - any h5py/HDF5 error means a broken file
        raise Failure(f"{path}: not a readable HDF5 file ({type(e).__name__}: {e})")
    if not found:
        raise Failure(f"{path}: HDF5 file without any group or dataset")
    if layout is not None and found != layout:
        missing = sorted(set(layout) - set(found))
        raise Failure(f"{path}: layout differs from the uninterrupted run's (missing {missing[:5]}, "
                      f"{len(found)} items against {len(layout)})")
    return found


def check_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Failure(f"{path}: no PNG signature")
    pos, idat, seen_iend = 8, [], False
    while pos < len(data):
        if pos + 12 > len(data):
            raise Failure(f"{path}: truncated chunk at byte {pos}")
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        end = pos + 12 + length
        if end > len(data):
            raise Failure(f"{path}: chunk {kind!r} at byte {pos} runs past the end")
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:end])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise Failure(f"{path}: bad CRC in chunk {kind!r} at byte {pos}")
        if kind == b"IDAT":
            idat.append(body)
        pos = end
        if kind == b"IEND":
            seen_iend = True
            break
    if not seen_iend:
        raise Failure(f"{path}: no IEND chunk")
    if pos != len(data):
        raise Failure(f"{path}: {len(data) - pos} bytes after IEND")
    try:
        zlib.decompress(b"".join(idat))
    except zlib.error as e:
        raise Failure(f"{path}: image data does not inflate ({e})")


def check_pdf(path):
    data = open(path, "rb").read()
    if not data.startswith(b"%PDF-"):
        raise Failure(f"{path}: no %PDF- header")
    if not data.rstrip().endswith(b"%%EOF"):
        raise Failure(f"{path}: does not end with %%EOF")
    m = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", data)
    if not m:
        raise Failure(f"{path}: no startxref before %%EOF")
    offset = int(m.group(1))
    target = data[offset:offset + 64]
    if not (target.startswith(b"xref") or re.match(rb"\d+\s+\d+\s+obj", target)):
        raise Failure(f"{path}: startxref {offset} does not point at a cross-reference")


def check_svg(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise Failure(f"{path}: not well-formed XML ({e})")
    if not root.tag.endswith("svg"):
        raise Failure(f"{path}: root element is {root.tag}, not svg")


def check_figure(path):
    {".png": check_png, ".pdf": check_pdf, ".svg": check_svg}[os.path.splitext(path)[1]](path)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_json(path):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise Failure(f"{path}: not complete JSON ({e})")


def check_safetensors(path):
    data_size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise Failure(f"{path}: shorter than a safetensors header")
        (n,) = struct.unpack("<Q", head)
        if 8 + n > data_size:
            raise Failure(f"{path}: header of {n} bytes runs past the end")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise Failure(f"{path}: header is not JSON ({e})")
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    if 8 + n + end != data_size:
        raise Failure(f"{path}: tensors end at {8 + n + end}, file has {data_size} bytes")


def check_zip(path):
    """Every member of the zip at `path` passes its CRC; returns the member names."""
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
            names = z.namelist()
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise Failure(f"{path}: not a complete zip ({e})")
    if bad is not None:
        raise Failure(f"{path}: member {bad} fails its CRC")
    return names


# --------------------------------------------------------------------------- processes

def start(cmd, log=None):
    out = open(log, "wb") if log else subprocess.DEVNULL
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)


def run_complete(cmd, log, watch=None):
    """Runs `cmd` to the end: (seconds, (first, last) s at which a temporary was seen in `watch`)."""
    t0 = time.monotonic()
    p = start(cmd, log)
    window = None
    while p.poll() is None:
        if watch and os.path.isdir(watch) and any(".tmp-" in n for n in os.listdir(watch)):
            now = time.monotonic() - t0
            window = (window[0] if window else now, now)
        time.sleep(0.003)
    elapsed = time.monotonic() - t0
    if p.returncode != 0:
        text = open(log, errors="replace").read()[-2000:]
        raise RuntimeError(f"uninterrupted run failed (rc {p.returncode}): {' '.join(cmd)}\n{text}")
    return elapsed, window


def kill_after(cmd, delay):
    """Starts `cmd`, SIGKILLs its process group after `delay` s; True when it had already exited."""
    p = start(cmd)
    try:
        p.wait(timeout=delay)
        finished = True
    except subprocess.TimeoutExpired:
        finished = False
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    return finished and p.returncode == 0


# --------------------------------------------------------------------------- file writers

class Stats:
    def __init__(self, name):
        self.name, self.kills, self.previous, self.none, self.new, self.half = name, 0, 0, 0, 0, 0
        self.finished, self.leftovers, self.notes = 0, 0, []
        self.t_full, self.window = 0.0, None

    def line(self):
        extra = f"; T_full {self.t_full:.2f} s"
        if self.window:
            extra += f", temporary present {self.window[0]:.2f}-{self.window[1]:.2f} s"
        return (f"{self.name}: {self.kills} kills, {self.previous} previous kept, {self.none} none, "
                f"{self.new} new complete, {self.half} half ({self.leftovers} temporaries left, "
                f"{self.finished} finished before the kill{extra})")


class FileWriter:
    """A command writing one or more files (`outputs`: name -> validator) into a folder."""

    def __init__(self, name, make_cmd, outputs):
        self.name, self.make_cmd, self.outputs = name, make_cmd, outputs

    def run(self, cli, work, kills, rng, stats):
        folder = os.path.join(work, self.name)
        keep = os.path.join(work, self.name + ".previous")
        os.makedirs(folder)
        os.makedirs(keep)
        variants = sorted(self.outputs)
        # One uninterrupted run per output variant (a figure format): T_full and the previous file.
        baseline, t_full = {}, {}
        for variant in variants:
            files = self.outputs[variant]
            cmd = self.make_cmd(cli, {k: os.path.join(folder, k) for k in files})
            t, window = run_complete(cmd, os.path.join(work, f"{self.name}-{variant}.log"), watch=folder)
            t_full[variant] = t
            stats.t_full = max(stats.t_full, t)
            if window and (stats.window is None or window[1] - window[0] > stats.window[1] - stats.window[0]):
                stats.window = window
            layouts = {}
            for k, validate in files.items():
                layouts[k] = validate(os.path.join(folder, k), None)
                shutil.move(os.path.join(folder, k), os.path.join(keep, k))
            baseline[variant] = layouts
            self.sweep(folder, set(), stats)  # nothing but the outputs should remain
        modes = ["previous"] * (kills // 2) + ["none"] * (kills - kills // 2)
        rng.shuffle(modes)
        for i, mode in enumerate(modes):
            variant = variants[i % len(variants)]
            files = self.outputs[variant]
            inodes = {}
            if mode == "previous":
                for k in files:
                    shutil.copy2(os.path.join(keep, k), os.path.join(folder, k))
                    inodes[k] = os.stat(os.path.join(folder, k)).st_ino
            delay = rng.uniform(0, t_full[variant] * 1.1)
            cmd = self.make_cmd(cli, {k: os.path.join(folder, k) for k in files})
            stats.kills += 1
            stats.finished += kill_after(cmd, delay)
            outcome = []
            try:
                for k, validate in files.items():
                    path = os.path.join(folder, k)
                    if not os.path.exists(path):
                        if mode == "previous":
                            raise Failure(f"{path}: the previous file is gone")
                        outcome.append("none")
                        continue
                    if mode == "previous" and os.stat(path).st_ino == inodes[k]:
                        if sha256(path) != sha256(os.path.join(keep, k)):
                            raise Failure(f"{path}: the previous file was modified in place")
                        outcome.append("previous")
                        continue
                    validate(path, baseline[variant][k])
                    outcome.append("new")
                self.sweep(folder, set(files), stats)
            except Failure as e:
                stats.half += 1
                stats.notes.append(f"kill {i} ({mode}, {variant}, after {delay:.3f} s): {e}")
                self.save_evidence(folder, work, i)
            else:
                # The command's primary output (the last one written) decides the outcome.
                primary = outcome[-1]
                stats.previous += primary == "previous"
                stats.none += primary == "none"
                stats.new += primary == "new"
            for k in files:
                path = os.path.join(folder, k)
                if os.path.exists(path):
                    os.remove(path)

    def sweep(self, folder, outputs, stats):
        """Counts and removes temporaries; anything else unexpected is a failure."""
        names = {n for files in self.outputs.values() for n in files}
        for entry in sorted(os.listdir(folder)):
            if entry in outputs:
                continue
            if any(re.fullmatch(re.escape(n) + r"\.tmp-\d+-\d+", entry) for n in names):
                stats.leftovers += 1
                os.remove(os.path.join(folder, entry))
                continue
            raise Failure(f"{os.path.join(folder, entry)}: unexpected file beside the output")

    @staticmethod
    def save_evidence(folder, work, i):
        dest = os.path.join(work, f"evidence-{os.path.basename(folder)}-{i}")
        shutil.copytree(folder, dest)
        for entry in os.listdir(folder):
            p = os.path.join(folder, entry)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)


def hdf5_validator(path, layout):
    return check_hdf5(path, layout)


def figure_validator(path, _layout):
    check_figure(path)
    return None


# --------------------------------------------------------------------------- training checkpoints

CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "trainer_state.json", "optimizer.pt")
STEP = re.compile(r"step-(\d{6,18})")
PARTIAL = re.compile(r"step-\d+\.tmp-\d+(-\d+)?")
FILE_TEMP = re.compile(r"(train\.json|log\.jsonl)\.tmp-\d+-\d+")


class TrainWriter:
    """`train` into a new run folder (none) or `train --resume` of a run with checkpoints (previous)."""

    name = "train"

    def __init__(self, model_config):
        self.model_config = model_config
        self.info_ok = {}     # hash of the files `info` reads -> verified

    def new_cmd(self, cli, run):
        # Small steps and a checkpoint after each: writing checkpoints is a good part of the time.
        return [cli, "train", "--task", "flipflop", "--length", "16", "--model", self.model_config,
                "--out", run, "--steps", "6", "--warmup", "2", "--batch-size", "4",
                "--checkpoint-every", "1", "--eval-sequences", "20", "--log-every", "1", "--seed", "1"]

    def check_checkpoint(self, cli, path, step):
        for name in CHECKPOINT_FILES:
            if not os.path.isfile(os.path.join(path, name)):
                raise Failure(f"{path}: checkpoint without {name}")
        config = check_json(os.path.join(path, "config.json"))
        check_json(os.path.join(path, "tokenizer.json"))
        state = check_json(os.path.join(path, "trainer_state.json"))
        training = config.get("training") if isinstance(config, dict) else None
        if state.get("step") != step or not isinstance(training, dict) or training.get("step") != step:
            raise Failure(f"{path}: trainer_state.json/config.json name another step than {step}")
        check_safetensors(os.path.join(path, "model.safetensors"))
        if not any(m.endswith("data.pkl") for m in check_zip(os.path.join(path, "optimizer.pt"))):
            raise Failure(f"{path}/optimizer.pt: a zip without data.pkl (not a torch::save archive)")
        key = hashlib.sha256("".join(sha256(os.path.join(path, n))
                                     for n in ("config.json", "model.safetensors", "tokenizer.json")).encode()).hexdigest()
        if key not in self.info_ok:
            r = subprocess.run([cli, "info", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if r.returncode != 0:
                raise Failure(f"{path}: `poslens-cli info` fails: {r.stderr.decode(errors='replace').strip()}")
            self.info_ok[key] = True

    def check_run(self, cli, run, pristine, stats):
        """Checks a run folder after a kill; returns the checkpoint steps it holds."""
        if not os.path.exists(run):
            return set()
        steps, torn = set(), 0
        for entry in sorted(os.listdir(run)):
            path = os.path.join(run, entry)
            m = STEP.fullmatch(entry)
            if m and os.path.isdir(path):
                step = int(m.group(1))
                if pristine and entry in pristine:
                    for name, digest in pristine[entry].items():
                        p = os.path.join(path, name)
                        if not os.path.isfile(p) or sha256(p) != digest:
                            raise Failure(f"{p}: a checkpoint of the resumed run changed")
                else:
                    self.check_checkpoint(cli, path, step)
                steps.add(step)
            elif PARTIAL.fullmatch(entry) or FILE_TEMP.fullmatch(entry):
                stats.leftovers += 1
            elif entry == "train.json":
                check_json(path)
            elif entry == "log.jsonl":
                # Appended line by line (not atomic by design, docs/training.md); a torn line is
                # reported, and --resume drops it.
                lines = open(path, "rb").read().split(b"\n")
                for line in lines[:-1]:
                    try:
                        json.loads(line)
                    except ValueError:
                        torn += 1
                if lines[-1]:
                    torn += 1
            else:
                raise Failure(f"{path}: unexpected entry in the run folder")
        if pristine:
            for entry in pristine:
                if not os.path.isdir(os.path.join(run, entry)):
                    raise Failure(f"{run}/{entry}: a checkpoint of the resumed run is gone")
        if torn:
            stats.notes.append(f"{run}/log.jsonl: {torn} torn line(s) (appended, not atomic; not counted as half)")
        return steps

    def run(self, cli, work, kills, rng, stats):
        folder = os.path.join(work, self.name)
        os.makedirs(folder)
        full = os.path.join(folder, "full")
        t_new, window = run_complete(self.new_cmd(cli, full), os.path.join(work, "train-full.log"), watch=full)
        stats.t_full, stats.window = t_new, window
        self.check_run(cli, full, None, stats)

        # The previous state: a run stopped by Ctrl-C (SIGINT: it finishes the step and writes a
        # checkpoint) once its checkpoint of step 2 exists.
        prev = os.path.join(folder, "previous")
        p = start(self.new_cmd(cli, prev), os.path.join(work, "train-previous.log"))
        while p.poll() is None and not os.path.isdir(os.path.join(prev, "step-000002")):
            time.sleep(0.002)
        p.send_signal(signal.SIGINT)
        if p.wait() != 0:
            raise RuntimeError("train interrupted with SIGINT did not exit 0: see train-previous.log")
        self.check_run(cli, prev, None, stats)
        pristine = {e: {n: sha256(os.path.join(prev, e, n)) for n in os.listdir(os.path.join(prev, e))}
                    for e in os.listdir(prev) if STEP.fullmatch(e)}
        prev_steps = {int(STEP.fullmatch(e).group(1)) for e in pristine}
        if max(prev_steps) >= 6:
            raise RuntimeError("the run meant to be stopped by Ctrl-C had finished: nothing to resume")
        resumed = os.path.join(folder, "resumed")
        shutil.copytree(prev, resumed)
        t_resume, _ = run_complete([cli, "train", "--resume", resumed], os.path.join(work, "train-resume.log"))
        self.check_run(cli, resumed, pristine, stats)
        for d in (full, resumed):
            shutil.rmtree(d)

        modes = ["previous"] * (kills // 2) + ["none"] * (kills - kills // 2)
        rng.shuffle(modes)
        run = os.path.join(folder, "run")
        stranded = 0
        for i, mode in enumerate(modes):
            if mode == "previous":
                shutil.copytree(prev, run)
                cmd, delay = [cli, "train", "--resume", run], rng.uniform(0, t_resume * 1.1)
            else:
                cmd, delay = self.new_cmd(cli, run), rng.uniform(0, t_new * 1.1)
            stats.kills += 1
            stats.finished += kill_after(cmd, delay)
            try:
                steps = self.check_run(cli, run, pristine if mode == "previous" else None, stats)
            except Failure as e:
                stats.half += 1
                stats.notes.append(f"kill {i} ({mode}, after {delay:.3f} s): {e}")
                shutil.copytree(run, os.path.join(work, f"evidence-train-{i}"))
            else:
                base = prev_steps if mode == "previous" else set()
                if mode == "none" and not steps and os.path.exists(os.path.join(run, "train.json")):
                    stranded += 1  # neither `train --out` (not empty) nor `--resume` (no checkpoint) takes it
                if steps - base:
                    stats.new += 1
                elif mode == "previous":
                    stats.previous += 1
                else:
                    stats.none += 1
            if os.path.exists(run):
                shutil.rmtree(run)
        stats.t_full = max(t_new, t_resume)
        if stranded:
            stats.notes.append(f"{stranded} kill(s) of a new run left a run folder with train.json and no "
                               "checkpoint (complete files only; not counted as half)")
        stats.notes.insert(0, f"T_full {t_new:.2f} s for a new run, {t_resume:.2f} s for --resume from step "
                              f"{max(prev_steps)}; the resumed run's checkpoints: steps {sorted(prev_steps)}")


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", required=True, help="poslens-cli binary")
    ap.add_argument("--fixtures", default=os.path.join(REPO, "..", "shared", "fixtures"))
    ap.add_argument("--kills", type=int, default=20, help="kills per writer (half onto a previous output)")
    ap.add_argument("--seed", type=int, default=None, help="seed of the kill times (default: random, printed)")
    ap.add_argument("--work", default=None, help="scratch folder (default: a new temporary one, removed on success)")
    ap.add_argument("--writers", default="run,position-map,heads,figure,train",
                    help="comma-separated subset of run,position-map,heads,figure,train")
    args = ap.parse_args()

    cli = os.path.abspath(args.cli)
    model = os.path.join(os.path.abspath(args.fixtures), "stories260K", "stories260K.bin")
    if not os.path.isfile(model):
        print(f"kill_writers: missing fixture {model}", file=sys.stderr)
        return 1
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    own_work = args.work is None
    work = tempfile.mkdtemp(prefix="poslens-kill-") if own_work else os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    if os.listdir(work):
        print(f"kill_writers: --work {work} is not empty", file=sys.stderr)
        return 1
    print(f"kill_writers: seed {seed}, {args.kills} kills per writer, work folder {work}", flush=True)

    writers = {
        "run": FileWriter("run", lambda c, o: [c, "run", model, "--text", LONG_TEXT, "--out", o["captures.h5"]],
                          {"h5": {"captures.h5": hdf5_validator}}),
        "position-map": FileWriter(
            "position-map", lambda c, o: [c, "position-map", model, "--text", MEDIUM_TEXT, "--probe-samples", "16",
                                  "--out", o["map.h5"]],
            {"h5": {"map.h5": hdf5_validator}}),
        "heads": FileWriter("heads", lambda c, o: [c, "heads", model, "--text", SHORT_TEXT, "--out", o["heads.h5"]],
                            {"h5": {"heads.h5": hdf5_validator}}),
        # position-map writes its HDF5 file, then the figure; both are checked, the figure counts.
        "figure": FileWriter(
            "figure",
            lambda c, o: [c, "position-map", model, "--text", SHORT_TEXT, "--heads", "0.0", "--probe-samples", "8",
                          "--out", o["fig.h5"], "--figure", next(v for k, v in o.items() if k != "fig.h5")],
            {fmt: {"fig.h5": hdf5_validator, "fig." + fmt: figure_validator} for fmt in ("png", "pdf", "svg")}),
        "train": TrainWriter(os.path.join(REPO, "resources", "demos", "configs", "flipflop-rope.json")),
    }
    chosen = [w.strip() for w in args.writers.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in writers]
    if unknown:
        print(f"kill_writers: unknown writer(s) {unknown}", file=sys.stderr)
        return 1

    rng = random.Random(seed)
    failed, t0 = False, time.monotonic()
    for name in chosen:
        stats = Stats(name)
        t = time.monotonic()
        try:
            writers[name].run(cli, work, args.kills, rng, stats)
        except RuntimeError as e:
            if name == "figure" and "built without Qt" in str(e):
                print(f"{name}: skipped (this poslens-cli has no --figure)", flush=True)
                continue
            print(f"{name}: ERROR {e}", flush=True)
            failed = True
            continue
        except Failure as e:
            stats.half += 1
            stats.notes.append(f"uninterrupted run: {e}")
        print(stats.line() + f" [{time.monotonic() - t:.1f} s]", flush=True)
        for note in stats.notes:
            print(f"  {name}: {note}", flush=True)
        failed |= stats.half > 0
    print(f"kill_writers: {'FAILED' if failed else 'ok'} in {time.monotonic() - t0:.1f} s (seed {seed})", flush=True)
    if own_work and not failed:
        shutil.rmtree(work, ignore_errors=True)
    elif failed:
        print(f"kill_writers: evidence kept in {work}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
