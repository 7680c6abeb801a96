"""The README's Python example runs as shown, and its plot gallery lists the commands that make
docs/img (scripts/gallery.sh)."""
import os
import re
import subprocess
import sys

from conftest import SOURCE


def test_readme_python_example_runs():
    text = (SOURCE / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-c", code], cwd=SOURCE, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "parallel.tp: got 0; expected an integer from 1 to 1048576" in p.stdout


def test_gallery_commands_are_the_script():
    readme = re.findall(r"`(scalemodel plot [^`]+ -o docs/img/[^`]+)`", (SOURCE / "README.md").read_text())
    script = (SOURCE / "scripts" / "gallery.sh").read_text()
    made = re.findall(r"^(scalemodel plot .+)$", script.split("# gallery: begin")[1].split("# gallery: end")[0], re.M)
    assert sorted(readme) == sorted(made) and len(made) == 7
    for cmd in made:
        out = re.search(r"-o (\S+)", cmd).group(1)
        assert (SOURCE / out).is_file(), out
        assert f"]({out})" in (SOURCE / "README.md").read_text()
