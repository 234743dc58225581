"""scripts/install-plugin finds the Python environment behind a `hermes` script in both forms pip writes.

pip (distlib) writes `#!<python>` when the interpreter's path fits a shebang line and, when it does not
(long install paths, e.g. under a deep temporary folder), a `#!/bin/sh` script whose second line
re-executes the real interpreter: `'''exec' "<python>" "$0" "$@"`. The environments here have no pip
and PATH has no uv, so the script stops at its "no pip" message, which names the interpreter it found.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def hermes_environment(root: Path) -> Path:
    """A virtualenv without pip that can `import hermes_cli`; returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True, check=True
    )
    Path(site.stdout.strip(), "hermes_cli.py").write_text("")
    return python


def run_install_plugin(script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "install-plugin"), str(script)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(script.parent)},
        timeout=60,
    )


@pytest.mark.parametrize("form", ["shebang", "long-path"])
def test_finds_the_interpreter_in_both_forms_pip_writes(tmp_path, form):
    root = tmp_path / ("deep-" * 30 if form == "long-path" else "short") / "venv"
    python = hermes_environment(root)
    script = root / "bin" / "hermes"
    if form == "shebang":
        script.write_text(f"#!{python}\nimport hermes_cli\n")
    else:
        script.write_text(f"#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\nimport hermes_cli\n")
    script.chmod(0o755)
    proc = run_install_plugin(script)
    assert proc.returncode == 1, proc.stderr
    assert f"run: {python} -m ensurepip" in proc.stderr


def test_a_script_that_is_not_python_is_refused_with_its_first_line(tmp_path):
    script = tmp_path / "hermes"
    script.write_text("#!/bin/bash\necho hi\n")
    script.chmod(0o755)
    proc = run_install_plugin(script)
    assert proc.returncode == 2
    assert "does not look like the hermes script of a Python environment (first line: #!/bin/bash)" in proc.stderr
