"""The README's "Install from a wheel": `scripts/wheel.sh` builds the abi3 wheel, which installs
into a fresh virtualenv and runs the quickstart and `lucille search` with no Rust toolchain on
PATH.

The wheel is built with the dev profile and the environment `scripts/test.sh` gives `maturin
develop` (CARGO_INCREMENTAL=0, clippy-driver as the workspace wrapper, RUSTFLAGS " -D warnings",
the venv first on PATH, the venv's interpreter), so cargo reuses the extension test.sh already
built and only links and packs it; the release wheel (`pip install .`'s build) would cost CI
nine minutes."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import venv
import zipfile

from services import missing

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPO_VENV = ROOT / ".venv"
CORPUS = ROOT / "examples" / "data" / "stdlib-reference.jsonl"


def build_env() -> dict[str, str]:
    """test.sh's environment for its cargo and maturin commands; what test.sh already exported
    is kept as it is (appending to RUSTFLAGS again would change the flags, and cargo would
    rebuild every crate)."""
    env = dict(os.environ)
    env.setdefault("CARGO_INCREMENTAL", "0")
    clippy = shutil.which("clippy-driver")
    if clippy and "RUSTC_WORKSPACE_WRAPPER" not in env:
        env["RUSTC_WORKSPACE_WRAPPER"] = clippy
    env.setdefault("RUSTFLAGS", " -D warnings")
    venv_bin = str(REPO_VENV / "bin")
    if env.get("PATH", "").split(os.pathsep)[0] != venv_bin:
        env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    python = REPO_VENV / "bin" / "python"
    env["PYTHON"] = str(python if python.exists() else sys.executable)
    return env


def build_wheel(out: pathlib.Path) -> pathlib.Path:
    env = build_env()
    if shutil.which("cargo", path=env["PATH"]) is None:
        missing("cargo is not installed: the wheel cannot be built")
    r = subprocess.run(
        [str(ROOT / "scripts" / "wheel.sh"), "--profile", "dev", "--out", str(out)],
        env=env, capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = list(out.glob("lucille_rs-*.whl"))
    assert len(wheels) == 1, wheels
    wheel = wheels[0]
    # The script names the wheel it built and its size.
    assert f"== wheel: {wheel}" in r.stdout, r.stdout
    assert " MB (" in r.stdout, r.stdout
    # abi3: one wheel for every CPython >= 3.9.
    assert "-cp39-abi3-" in wheel.name, wheel.name
    # One native module: the one this build linked, not a copy `maturin develop` left in
    # python/lucille/ as well.
    with zipfile.ZipFile(wheel) as z:
        native = [n for n in z.namelist() if n.endswith(".so")]
    assert native == ["lucille/_lucille.abi3.so"], native
    return wheel


def test_the_wheel_installs_and_runs_without_rust(tmp_path: pathlib.Path) -> None:
    wheel = build_wheel(tmp_path / "dist")

    # A fresh virtualenv that sees nothing of the repository's venv or its sources.
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=False, clear=True)
    bin_dir = env_dir / "bin"
    # A PATH without cargo or rustc: the venv, then the system's own folders.
    path = os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"])
    for tool in ("cargo", "rustc", "maturin"):
        assert shutil.which(tool, path=path) is None, tool
    run_env = {"PATH": path, "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT", "SSL_CERT_FILE",
                "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"):
        if key in os.environ:
            run_env[key] = os.environ[key]
    # The user's pip cache, so numpy (the wheel's one dependency) is not downloaded each run.
    run_env["PIP_CACHE_DIR"] = os.environ.get(
        "PIP_CACHE_DIR", str(pathlib.Path.home() / ".cache" / "pip")
    )

    def run(*args: str, cwd: pathlib.Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=cwd, env=run_env, capture_output=True, text=True)

    pip = run(str(bin_dir / "python"), "-m", "pip", "install", "--quiet",
              "--disable-pip-version-check", str(wheel))
    assert pip.returncode == 0, pip.stdout + pip.stderr

    # The module imported is the wheel's, from the new venv.
    where = run(str(bin_dir / "python"), "-c",
                "import lucille, lucille._lucille as m; print(m.__file__)")
    assert where.returncode == 0, where.stderr
    assert pathlib.Path(where.stdout.strip()).is_relative_to(env_dir), where.stdout

    # The quickstart as the README runs it, from a project folder holding only the example's
    # files: `lucille run examples/quickstart.conf`, then `lucille search ./quickstart-index`.
    project = tmp_path / "project"
    (project / "examples" / "data").mkdir(parents=True)
    for name in ("quickstart.conf", "quickstart_stages.py"):
        shutil.copy(ROOT / "examples" / name, project / "examples" / name)
    shutil.copy(CORPUS, project / "examples" / "data" / CORPUS.name)
    records = sum(1 for _ in CORPUS.open(encoding="utf-8"))

    lucille = str(bin_dir / "lucille")
    r = run(lucille, "run", "examples/quickstart.conf", cwd=project)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "RUN SUMMARY: Success. 1/1 connectors complete." in out, out
    assert f"stdlib: complete. {records} docs succeeded. 0 docs failed. 0 docs dropped." in out, out
    assert (project / "quickstart-index").is_dir()

    s = run(lucille, "search", "./quickstart-index", "serialize obj JSON formatted str",
            "--limit", "3", "--json", cwd=project)
    assert s.returncode == 0, s.stderr
    hits = [json.loads(line) for line in s.stdout.splitlines() if line.strip()]
    assert 0 < len(hits) <= 3, s.stdout
    assert "json.dumps" in [h["id"] for h in hits], hits
    dumps = next(h for h in hits if h["id"] == "json.dumps")
    assert dumps["package"] == "json"  # the ApplyRegex stage ran
    assert "python" not in dumps  # DeleteFields ran
