#!/usr/bin/env python3
"""Ask the REAL Hermes Agent what a profile's settings resolve to, and print one JSON object.

Run it with the interpreter of the venv Hermes is installed in, with ``HERMES_HOME`` pointing at
the profile to inspect (what ``hermes -p <bot>`` sets)::

    HERMES_HOME=<root>/profiles/<bot> <venv>/bin/python tests/effect/hermes_probe.py \
        [--platform telegram ...] [--now 2026-01-05T08:00:00+00:00] [--title "Bot Chat"]

Everything is resolved by importing Hermes' own modules (written against hermes-agent 0.19.0; each
probe names the file:function it calls). Nothing here parses config files itself, and nothing is
imported from hermes-fleet: the script must run in Hermes' venv, stand-alone.

No side effects on the inspected home: Hermes' loaders write (``hermes_cli/config.py:
ensure_hermes_home`` creates directories, chmods them and seeds a default SOUL.md; importing
``hermes_cli.main`` creates ``logs/``; ``hermes_state.SessionDB`` creates/migrates ``state.db``;
``cron/jobs.py:load_jobs`` creates ``cron/`` and may rewrite jobs.json; ``hermes_cli/env_loader.py:
_sanitize_env_file_if_needed`` may rewrite ``.env``). So the probe copies the profile (and the small
top-level files of its root) into a temporary shadow tree of the same shape
(``<tmp>/root/profiles/<bot>``), points ``HERMES_HOME`` at the copy BEFORE importing Hermes, and
reports under ``_meta.hermes_writes`` what Hermes wrote into the copy.

Each probe runs in its own try/except (and thread with a timeout); a failing probe reports
``{"error": "..."}`` under its key instead of crashing the script. Secret values are never printed:
they are reported as ``sha256:<first 12 hex of sha256(value)>``.

Output keys: _meta, tools, model, timezone, checkpoints, skills_disabled, mcp, tts, approvals,
memory, env, soul, bot_chat.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

PROBE_KEYS = (
    "tools",
    "model",
    "timezone",
    "checkpoints",
    "skills_disabled",
    "mcp",
    "tts",
    "approvals",
    "memory",
    "env",
    "soul",
    "bot_chat",
)

# Top-level entries of a profile that are bulky and irrelevant to any probe (caches, logs,
# transcripts, the terminal sandbox HOME/workspace). Everything else is copied into the shadow.
_SKIP_PROFILE_ENTRIES = {
    "logs",
    "sessions",
    "image_cache",
    "audio_cache",
    "checkpoints",
    "cache",
    "home",
    "workspace",
    "sandboxes",
    "browser",
    "node_modules",
    "plans",
    "voice-memos",
    "tmp",
}
# Under cron/: job outputs can be large and are never read by the probes.
_SKIP_NESTED = {("cron", "output")}
_ROOT_FILE_MAX_BYTES = 8 * 1024 * 1024


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def mask(value: Any) -> Any:
    """``sha256:<12 hex>`` of a secret's string value (None stays None)."""
    if value is None:
        return None
    return "sha256:" + hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:12]


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def err(exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}"}


def jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = [jsonable(v) for v in obj]
        return sorted(items, key=repr) if isinstance(obj, (set, frozenset)) else items
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, Path):
        return str(obj)
    return repr(obj)


def run_with_timeout(fn: Callable[[], Any], timeout: float) -> Any:
    """Run one probe; never raises. A probe that hangs (e.g. a network call) reports a timeout."""
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["value"] = err(exc)
            box["trace"] = traceback.format_exc()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return {"error": f"timeout after {timeout:g}s"}
    if "trace" in box and os.environ.get("HERMES_PROBE_DEBUG"):
        sys.stderr.write(box["trace"])
    return box.get("value")


def parse_args(argv: list[str]) -> argparse.Namespace:
    # NB: no "-p" flag - importing hermes_cli.main scans sys.argv for "-p/--profile".
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--platform",
        action="append",
        default=[],
        metavar="NAME",
        help="extra platform to resolve toolsets / skills for (repeatable; cli is always included)",
    )
    parser.add_argument(
        "--now",
        default=None,
        metavar="ISO",
        help="pretend the current time is this ISO timestamp when computing cron next runs",
    )
    parser.add_argument("--title", default="Bot Chat", help='session title for bot_chat (default "Bot Chat")')
    parser.add_argument("--probe-timeout", type=float, default=30.0, help="seconds per probe (default 30)")
    parser.add_argument("--keep-shadow", action="store_true", help="do not delete the shadow copy (debug)")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------------------------
# shadow copy: Hermes runs against a copy so the real home is never written
# --------------------------------------------------------------------------------------------


def _copy_file(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copy2(src, dst)


def _copy_profile(src: Path, dst: Path, *, skip_top: set[str]) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        rel = Path(directory).resolve().relative_to(src.resolve()).parts
        skipped = set()
        for name in names:
            top_level_skip = not rel and name in skip_top
            nested_skip = len(rel) == 1 and (rel[0], name) in _SKIP_NESTED
            if top_level_skip or nested_skip or name.endswith(".lock") or name == "active_profile":
                skipped.add(name)
        return skipped

    shutil.copytree(src, dst, symlinks=True, ignore=ignore)


def make_shadow(real_home: Path) -> tuple[Path, Path]:
    """Return (tmpdir, shadow_home). The shadow keeps the ``<root>/profiles/<name>`` shape, so
    Hermes' profile detection (hermes_constants.get_default_hermes_root) behaves the same."""
    tmp = Path(tempfile.mkdtemp(prefix="hermes-probe-"))
    if real_home.parent.name == "profiles":
        real_root = real_home.parent.parent
        shadow_root = tmp / "root"
        shadow_home = shadow_root / "profiles" / real_home.name
        # The root's small top-level files (auth.json is read by profiles as a read-only
        # credential fallback: hermes_cli/auth.py:_global_auth_file_path). No databases, no
        # active_profile (the probe inspects exactly the given home).
        for entry in real_root.iterdir() if real_root.is_dir() else []:
            try:
                if entry.name == "active_profile" or entry.name.endswith((".db", ".db-wal", ".db-shm", ".lock", ".log")):
                    continue
                if entry.is_file() and entry.stat().st_size <= _ROOT_FILE_MAX_BYTES:
                    _copy_file(entry, shadow_root / entry.name)
            except OSError:
                continue
        _copy_profile(real_home, shadow_home, skip_top=_SKIP_PROFILE_ENTRIES)
    else:
        shadow_home = tmp / "root"
        _copy_profile(real_home, shadow_home, skip_top=_SKIP_PROFILE_ENTRIES | {"profiles"})
    return tmp, shadow_home


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            rel = str(path.relative_to(root))
            out[rel] = (-1, -1) if path.is_dir() and not path.is_symlink() else (st.st_size, st.st_mtime_ns)
    return out


def diff_writes(before: dict, after: dict) -> list[str]:
    changes = []
    for rel, sig in sorted(after.items()):
        if rel not in before:
            changes.append(f"created {rel}")
        elif before[rel] != sig:
            changes.append(f"modified {rel}")
    for rel in sorted(set(before) - set(after)):
        changes.append(f"deleted {rel}")
    return changes


# --------------------------------------------------------------------------------------------
# probes (each returns a JSON-able value; exceptions are turned into {"error": ...})
# --------------------------------------------------------------------------------------------


class Probe:
    def __init__(self, args: argparse.Namespace, real_home: Path, shadow_home: Path, pre_env: dict):
        self.args = args
        self.real_home = real_home
        self.shadow_home = shadow_home
        self.pre_env = pre_env
        self.platforms = ["cli"] + [p for p in dict.fromkeys(args.platform) if p != "cli"]
        self.cli_module = None  # cli.py, imported lazily (holds CLI_CONFIG)
        self.main_module = None  # hermes_cli.main (the `hermes` entry point)
        self.runtime: dict | None = None

    # -- bootstrap: what `hermes -p <bot> chat` does before anything else ----------------------
    def bootstrap(self) -> dict:
        """Import the real entry point. hermes_cli/main.py at import time runs
        _apply_profile_override() (returns early: HERMES_HOME is already a profile dir) and
        hermes_cli/env_loader.py:load_hermes_dotenv() (the profile .env -> os.environ)."""
        info: dict = {}
        saved_argv = sys.argv
        sys.argv = [saved_argv[0]]  # hermes_cli.main scans sys.argv for -p/--profile
        try:
            try:
                import hermes_cli.main as main_module

                self.main_module = main_module
                info["entrypoint"] = "hermes_cli.main imported (load_hermes_dotenv ran)"
            except BaseException as exc:
                info["entrypoint_error"] = err(exc)["error"]
                from hermes_cli.env_loader import load_hermes_dotenv

                load_hermes_dotenv(hermes_home=str(self.shadow_home))
                info["entrypoint"] = "fallback: hermes_cli.env_loader.load_hermes_dotenv"
            try:
                # cli.py (classic REPL, default interface) builds CLI_CONFIG at import:
                # cli.py:load_cli_config (its own defaults + config.yaml + managed overlay).
                import cli as cli_module

                self.cli_module = cli_module
            except BaseException as exc:
                info["cli_import_error"] = err(exc)["error"]
        finally:
            sys.argv = saved_argv
        return info

    def load_config(self) -> dict:
        # hermes_cli/config.py:load_config -> DEFAULT_CONFIG deep-merged with <home>/config.yaml,
        # ${VAR} expanded, managed scope overlaid per leaf (_load_config_impl).
        from hermes_cli.config import load_config

        return load_config()

    def cli_config(self) -> dict:
        if self.cli_module is not None and isinstance(getattr(self.cli_module, "CLI_CONFIG", None), dict):
            return self.cli_module.CLI_CONFIG
        return self.load_config()

    # -- tools ---------------------------------------------------------------------------------
    def tools(self) -> dict:
        """hermes_cli/tools_config.py:_get_platform_tools(config, platform) - the single resolver
        used by cli.py:main (with cli.CLI_CONFIG, platform "cli"), gateway/run.py (with
        gateway/run.py:_load_gateway_config(), platform key = the adapter's platform), and
        cron/scheduler.py:_resolve_cron_enabled_toolsets (load_config(), platform "cron")."""
        from hermes_cli.tools_config import _get_platform_tools

        out: dict = {}
        gateway_cfg = None
        for platform in self.platforms:
            try:
                if platform == "cli":
                    cfg = self.cli_config()
                elif platform == "cron":
                    cfg = self.load_config()
                else:
                    if gateway_cfg is None:
                        try:
                            from gateway.run import _load_gateway_config

                            gateway_cfg = _load_gateway_config()
                        except Exception:
                            gateway_cfg = self.load_config()
                    cfg = gateway_cfg
                out[platform] = sorted(str(t) for t in _get_platform_tools(cfg, platform))
            except Exception as exc:
                out[platform] = err(exc)
        return out

    # -- model ---------------------------------------------------------------------------------
    def model(self) -> dict:
        """hermes_cli/runtime_provider.py:_get_model_config / resolve_requested_provider /
        resolve_runtime_provider (what AIAgent gets as provider/base_url/api_key), and the model
        name the classic CLI uses: cli.py:HermesCLI.__init__ reads CLI_CONFIG["model"]["default"]
        (or ["model"]); config.yaml is authoritative, LLM_MODEL/OPENAI_MODEL env are ignored."""
        from hermes_cli.runtime_provider import (
            _get_model_config,
            resolve_requested_provider,
            resolve_runtime_provider,
        )

        model_cfg = _get_model_config()
        out: dict = {
            "default": model_cfg.get("default") or None,
            "provider_requested": resolve_requested_provider(),
            "base_url_configured": model_cfg.get("base_url") or None,
        }
        try:
            cli_model = self.cli_config().get("model", {})
            if isinstance(cli_model, dict):
                out["cli_model"] = cli_model.get("default") or cli_model.get("model") or None
            else:
                out["cli_model"] = cli_model or None
        except Exception as exc:
            out["cli_model"] = err(exc)
        try:
            runtime = resolve_runtime_provider()
            self.runtime = runtime
            out["runtime"] = {
                "provider": runtime.get("provider"),
                "base_url": runtime.get("base_url"),
                "api_mode": runtime.get("api_mode"),
                "source": runtime.get("source"),
                "api_key": mask(runtime.get("api_key")) if runtime.get("api_key") else None,
            }
        except Exception as exc:
            out["runtime"] = err(exc)
        return out

    # -- timezone + cron -----------------------------------------------------------------------
    def timezone(self) -> dict:
        """hermes_time.py:_resolve_timezone_name/get_timezone: env HERMES_TIMEZONE, else
        config.yaml `timezone` (+ managed overlay), else server-local; cached per process.
        A CLI process keeps HERMES_TIMEZONE from the shell/.env (env wins). The gateway -
        which also runs the cron ticker - bridges config.yaml `timezone` INTO HERMES_TIMEZONE
        when its module is imported (gateway/run.py, module level, after load_hermes_dotenv), so
        there config wins. Jobs of the profile's cron store (cron/jobs.py:load_jobs ->
        <HERMES_HOME>/cron/jobs.json) are computed with the gateway's zone by
        cron/jobs.py:compute_next_run(schedule, last_run_at), which takes "now" from
        cron.jobs._hermes_now (= hermes_time.now); with --now that module global is replaced."""
        import cron.jobs as cron_jobs
        import hermes_time

        env_tz = os.environ.pop("HERMES_TIMEZONE", None)
        hermes_time.reset_cache()
        configured = hermes_time._resolve_timezone_name() or None  # config.yaml (+ managed) only
        env_tz = (env_tz or "").strip() or None
        cli_name = env_tz or configured
        gateway_name = configured or env_tz
        if gateway_name:
            os.environ["HERMES_TIMEZONE"] = gateway_name
        hermes_time.reset_cache()
        tz = hermes_time.get_timezone()
        out: dict = {
            "configured": configured,
            "env": env_tz,
            "cli": cli_name,
            "gateway": gateway_name,
            "effective": getattr(tz, "key", None) if tz is not None else None,
            "source": ("config.yaml timezone" if configured else "env HERMES_TIMEZONE" if env_tz else "server local time"),
            "valid": (tz is not None) if gateway_name else None,
            "now": hermes_time.now().isoformat(),
        }

        original_now = cron_jobs._hermes_now
        if self.args.now:
            injected = datetime.fromisoformat(self.args.now)
            if injected.tzinfo is None:
                raise ValueError("--now must carry a UTC offset, e.g. 2026-01-05T08:00:00+00:00")
            target_tz = tz if tz is not None else datetime.now().astimezone().tzinfo
            fixed = injected.astimezone(target_tz)
            cron_jobs._hermes_now = lambda: fixed  # type: ignore[assignment]
            out["now"] = fixed.isoformat()
            out["now_injected"] = True
        try:
            jobs_out = []
            try:
                current_model = cron_jobs._resolve_default_model_snapshot()
            except Exception:
                current_model = None
            current_provider = (self.runtime or {}).get("provider")
            for job in cron_jobs.load_jobs():
                entry: dict = {
                    "id": job.get("id"),
                    "name": job.get("name"),
                    "enabled": job.get("enabled", True),
                    "schedule": jsonable(job.get("schedule")),
                    "stored_next_run_at": job.get("next_run_at"),
                    "last_run_at": job.get("last_run_at"),
                    "enabled_toolsets": job.get("enabled_toolsets"),
                }
                try:
                    entry["next_run"] = cron_jobs.compute_next_run(job.get("schedule") or {}, job.get("last_run_at"))
                except Exception as exc:
                    entry["next_run"] = err(exc)
                # cron/scheduler.py:run_job drift guard: an unpinned job whose creation-time
                # provider/model snapshot differs from today's resolution is SKIPPED.
                drift = []
                snap_p = (job.get("provider_snapshot") or "").strip().lower()
                if (
                    snap_p
                    and not (job.get("provider") or "").strip()
                    and current_provider
                    and str(current_provider).strip().lower() != snap_p
                ):
                    drift.append(f"provider {snap_p} -> {current_provider}")
                snap_m = (job.get("model_snapshot") or "").strip().lower()
                cur_m = job.get("model") or os.getenv("HERMES_MODEL") or current_model or ""
                if snap_m and not (job.get("model") or "").strip() and cur_m and cur_m.strip().lower() != snap_m:
                    drift.append(f"model {snap_m} -> {cur_m}")
                entry["provider_snapshot"] = job.get("provider_snapshot")
                entry["model_snapshot"] = job.get("model_snapshot")
                entry["drift"] = drift
                jobs_out.append(entry)
            out["jobs"] = jobs_out
        finally:
            cron_jobs._hermes_now = original_now
        return out

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoints(self) -> dict:
        """cli.py:HermesCLI.__init__ reads CLI_CONFIG["checkpoints"] (a bare bool is accepted)
        and hands enabled/max_* to AIAgent (hermes_cli/cli_agent_setup_mixin.py), which builds
        tools/checkpoint_manager.py:CheckpointManager (agent/agent_init.py). Auto-prune settings
        come from load_config()["checkpoints"] (cli.py:_run_checkpoint_auto_maintenance,
        gateway/run.py startup). NB: the gateway and the TUI build agents with
        checkpoints_enabled=False (TUI: only `--checkpoints` -> HERMES_TUI_CHECKPOINTS)."""
        from tools.checkpoint_manager import CHECKPOINT_BASE, CheckpointManager

        cp_cfg = self.cli_config().get("checkpoints", {})
        if isinstance(cp_cfg, bool):
            cp_cfg = {"enabled": cp_cfg}
        manager = CheckpointManager(
            enabled=bool(cp_cfg.get("enabled", False)),
            max_snapshots=cp_cfg.get("max_snapshots", 20),
            max_total_size_mb=cp_cfg.get("max_total_size_mb", 500),
            max_file_size_mb=cp_cfg.get("max_file_size_mb", 10),
        )
        full = self.load_config().get("checkpoints") or {}
        try:
            store = str(Path(CHECKPOINT_BASE).relative_to(self.shadow_home))
        except ValueError:
            store = str(CHECKPOINT_BASE)
        return {
            "enabled": manager.enabled,
            "max_snapshots": manager.max_snapshots,
            "max_total_size_mb": manager.max_total_size_mb,
            "max_file_size_mb": manager.max_file_size_mb,
            "auto_prune": bool(full.get("auto_prune", False)),
            "retention_days": full.get("retention_days"),
            "delete_orphans": full.get("delete_orphans"),
            "min_interval_hours": full.get("min_interval_hours"),
            "store": store,
            "applies_to": "classic CLI only (gateway/TUI agents: checkpoints_enabled=False)",
        }

    # -- skills --------------------------------------------------------------------------------
    def skills_disabled(self) -> dict:
        """agent/skill_utils.py:get_disabled_skill_names(platform) - skills.disabled unioned with
        skills.platform_disabled.<platform>, read from the RAW config.yaml (no managed overlay).
        tools/skills_tool.py:_find_all_skills hides them from the agent's skill index;
        tools/skills_tool.py:_is_skill_disabled (skill_view) reads load_config() instead."""
        from agent.skill_utils import get_disabled_skill_names

        out: dict = {}
        saved = {k: os.environ.pop(k, None) for k in ("HERMES_PLATFORM", "HERMES_SESSION_PLATFORM")}
        try:
            for platform in self.platforms:
                out[platform] = sorted(get_disabled_skill_names(platform))
        finally:
            for k, v in saved.items():
                if v is not None:
                    os.environ[k] = v
        try:
            skills_cfg = self.load_config().get("skills") or {}
            out["load_config_disabled"] = sorted(str(s) for s in (skills_cfg.get("disabled") or []))
        except Exception as exc:
            out["load_config_disabled"] = err(exc)
        try:
            from tools.skills_tool import _find_all_skills

            installed = {s.get("name") for s in _find_all_skills(skip_disabled=True)}
            visible = {s.get("name") for s in _find_all_skills()}
            out["installed"] = len(installed)
            out["hidden"] = sorted(n for n in installed - visible if n)
        except Exception as exc:
            out["hidden"] = err(exc)
        return out

    # -- mcp -----------------------------------------------------------------------------------
    def mcp(self) -> dict:
        """tools/mcp_tool.py:_load_mcp_config (load_config()["mcp_servers"], HERMES_SAFE_MODE ->
        none, suspicious entries dropped by _filter_suspicious_mcp_servers, ${VAR}/${env:VAR}
        interpolated by _interpolate_env_vars) and the `enabled` test of
        tools/mcp_tool.py:discover_mcp_tools (_parse_boolish(cfg.get("enabled", True))).
        stdio servers get env = tools/mcp_tool.py:_build_safe_env(cfg["env"]) (PATH/HOME/...
        + the declared env only); http servers send cfg["headers"]."""
        from tools.mcp_tool import _load_mcp_config, _parse_boolish

        configured = self.load_config().get("mcp_servers") or {}
        loaded = _load_mcp_config()
        servers: dict = {}
        for name, raw in configured.items() if isinstance(configured, dict) else []:
            if not isinstance(raw, dict):
                servers[str(name)] = {"error": f"not a mapping: {type(raw).__name__}"}
                continue
            cfg = loaded.get(name)
            entry: dict = {
                "enabled": _parse_boolish(raw.get("enabled", True), default=True),
                "loaded": cfg is not None,
                "transport": "http" if raw.get("url") else "stdio",
            }
            if cfg is not None:
                entry["command"] = cfg.get("command")
                entry["args"] = jsonable(cfg.get("args"))
                entry["url"] = cfg.get("url")
                env = cfg.get("env") or {}
                headers = cfg.get("headers") or {}
                entry["env"] = {str(k): mask(v) for k, v in env.items()} if isinstance(env, dict) else jsonable(env)
                entry["headers"] = (
                    {str(k): mask(v) for k, v in headers.items()} if isinstance(headers, dict) else jsonable(headers)
                )
                unresolved = [
                    f"{kind}.{k}"
                    for kind, block in (("env", env), ("headers", headers))
                    if isinstance(block, dict)
                    for k, v in block.items()
                    if isinstance(v, str) and "${" in v
                ]
                entry["unresolved"] = unresolved
            servers[str(name)] = entry
        would_start = sorted(n for n, e in servers.items() if e.get("enabled") and e.get("loaded"))
        return {"servers": servers, "would_start": would_start, "safe_mode": bool(os.environ.get("HERMES_SAFE_MODE"))}

    # -- tts -----------------------------------------------------------------------------------
    def tts(self) -> dict:
        """tools/tts_tool.py:_load_tts_config (load_config()["tts"], so DEFAULT_CONFIG's per-provider
        defaults apply) and _get_provider (tts.provider, default "edge"). The voice is read per
        provider by the generator functions (_generate_edge_tts: tts.edge.voice,
        _generate_openai_tts: tts.openai.voice, _generate_elevenlabs: tts.elevenlabs.voice_id, ...);
        command providers: tts.providers.<name>.voice; plugin providers: tts.voice."""
        import tools.tts_tool as tts_tool

        cfg = tts_tool._load_tts_config()
        provider = tts_tool._get_provider(cfg)
        # provider -> (section, voice key, default constant) mirroring the generators above.
        table = {
            "edge": ("edge", "voice", "DEFAULT_EDGE_VOICE"),
            "elevenlabs": ("elevenlabs", "voice_id", "DEFAULT_ELEVENLABS_VOICE_ID"),
            "openai": ("openai", "voice", "DEFAULT_OPENAI_VOICE"),
            "deepinfra": ("deepinfra", "voice", "DEFAULT_DEEPINFRA_TTS_VOICE"),
            "minimax": ("minimax", "voice_id", "DEFAULT_MINIMAX_VOICE_ID"),
            "xai": ("xai", "voice_id", "DEFAULT_XAI_VOICE_ID"),
            "mistral": ("mistral", "voice_id", "DEFAULT_MISTRAL_TTS_VOICE_ID"),
            "gemini": ("gemini", "voice", "DEFAULT_GEMINI_TTS_VOICE"),
            "kittentts": ("kittentts", "voice", "DEFAULT_KITTENTTS_VOICE"),
            "piper": ("piper", "voice", "DEFAULT_PIPER_VOICE"),
        }
        out: dict = {"provider": provider}
        if provider in table:
            section, key, default_name = table[provider]
            block = cfg.get(section) or {}
            out["kind"] = "builtin"
            out["voice_key"] = f"tts.{section}.{key}"
            out["voice"] = (block.get(key) if isinstance(block, dict) else None) or getattr(tts_tool, default_name, None)
            if isinstance(block, dict) and block.get("model"):
                out["model"] = block.get("model")
        elif provider in getattr(tts_tool, "BUILTIN_TTS_PROVIDERS", ()):  # neutts: reference audio, no voice
            out["kind"] = "builtin"
            out["voice"] = None
        else:
            named = tts_tool._get_named_provider_config(cfg, provider)
            if named and tts_tool._is_command_provider_config(named):
                out["kind"] = "command"
                out["voice_key"] = f"tts.providers.{provider}.voice"
                out["voice"] = named.get("voice")
            else:
                out["kind"] = "plugin-or-unknown (falls back to edge when no plugin registers it)"
                out["voice_key"] = "tts.voice"
                out["voice"] = cfg.get("voice")
        return out

    # -- approvals -----------------------------------------------------------------------------
    def approvals(self) -> dict:
        """tools/approval.py:_get_approval_mode (approvals.mode via load_config, normalised by
        _normalize_approval_mode: YAML `off` (False) -> "off", unknown -> "manual"),
        _get_approval_timeout, _get_cron_approval_mode, is_approval_bypass_active
        (--yolo/HERMES_YOLO_MODE frozen at import, session /yolo, mode off)."""
        import tools.approval as approval

        cfg = approval._get_approval_config()
        return {
            "mode": approval._get_approval_mode(),
            "timeout": approval._get_approval_timeout(),
            "cron_mode": approval._get_cron_approval_mode(),
            "deny": jsonable(cfg.get("deny") or []),
            "yolo_env": bool(getattr(approval, "_YOLO_MODE_FROZEN", False)),
            "bypass_active": approval.is_approval_bypass_active(),
        }

    # -- memory --------------------------------------------------------------------------------
    def memory(self) -> dict:
        """agent/agent_init.py (AIAgent init): memory = load_config()["memory"];
        memory_enabled / user_profile_enabled gate tools/memory_tool.py:MemoryStore(
        memory_char_limit, user_char_limit); memory.provider selects an external plugin."""
        mem = self.load_config().get("memory", {}) or {}
        out: dict = {
            "memory_enabled": bool(mem.get("memory_enabled", False)),
            "user_profile_enabled": bool(mem.get("user_profile_enabled", False)),
            "provider": mem.get("provider") or None,
            "write_approval": mem.get("write_approval"),
            "nudge_interval": int(mem.get("nudge_interval", 10)),
        }
        if out["memory_enabled"] or out["user_profile_enabled"]:
            from tools.memory_tool import MemoryStore

            store = MemoryStore(
                memory_char_limit=mem.get("memory_char_limit", 2200),
                user_char_limit=mem.get("user_char_limit", 1375),
            )
            out["memory_char_limit"] = store.memory_char_limit
            out["user_char_limit"] = store.user_char_limit
        else:
            out["memory_char_limit"] = None
            out["user_char_limit"] = None
        return out

    # -- env -----------------------------------------------------------------------------------
    def env(self) -> dict:
        """hermes_cli/env_loader.py:load_hermes_dotenv (called at import by hermes_cli/main.py,
        cli.py, run_agent.py, gateway/run.py): python-dotenv load_dotenv(<home>/.env,
        override=True) - the profile .env beats the shell - then external secret sources, then
        the managed-scope .env (override=True) last. Keys are the ones python-dotenv parses
        from <home>/.env; values are what os.environ holds afterwards."""
        from dotenv import dotenv_values

        env_path = self.shadow_home / ".env"
        keys = list(dotenv_values(env_path).keys()) if env_path.exists() else []
        values = {k: mask(os.environ.get(k)) if k in os.environ else None for k in keys}
        out: dict = {
            "loader": "hermes_cli.env_loader.load_hermes_dotenv (python-dotenv load_dotenv, override=True)",
            "values": values,
            "overrode_shell": sorted(k for k in keys if k in self.pre_env and self.pre_env[k] != os.environ.get(k)),
        }
        try:
            from hermes_cli import managed_scope

            out["managed_keys"] = sorted(managed_scope.load_managed_env().keys())
        except Exception as exc:
            out["managed_keys"] = err(exc)
        return out

    # -- soul ----------------------------------------------------------------------------------
    def soul(self) -> dict:
        """agent/prompt_builder.py:load_soul_md - <HERMES_HOME>/SOUL.md, stripped, injection-
        scanned (_scan_context_content) and truncated; it first calls
        hermes_cli/config.py:ensure_hermes_home, which SEEDS hermes_cli/default_soul.py:
        DEFAULT_SOUL_MD when SOUL.md is missing (or a legacy empty template)."""
        from agent.prompt_builder import load_soul_md

        existed = (self.real_home / "SOUL.md").is_file()
        content = load_soul_md()
        out: dict = {"file_existed": existed}
        if content is None:
            out.update(sha256=None, first_line=None, chars=0)
            return out
        out["sha256"] = sha256_hex(content)
        out["first_line"] = content.splitlines()[0] if content else ""
        out["chars"] = len(content)
        try:
            from hermes_cli.default_soul import DEFAULT_SOUL_MD

            out["is_default"] = content == DEFAULT_SOUL_MD.strip()
        except Exception:
            pass
        if existed:
            raw = (self.real_home / "SOUL.md").read_text(encoding="utf-8").strip()
            out["matches_file"] = content == raw
        return out

    # -- bot chat ------------------------------------------------------------------------------
    def bot_chat(self) -> dict:
        """`hermes -p <bot> chat -c "<title>"`: hermes_cli/main.py:cmd_chat ->
        _resolve_session_by_name_or_id(title): SessionDB().get_session(title) as an id, else
        hermes_state.py:SessionDB.resolve_session_by_title (exact title, but the newest
        "<title> #N" lineage variant wins), then SessionDB.get_compression_tip."""
        title = self.args.title
        existed = (self.real_home / "state.db").is_file()
        if self.main_module is not None:
            resolver = self.main_module._resolve_session_by_name_or_id
        else:
            from hermes_cli.main import _resolve_session_by_name_or_id as resolver
        session_id = resolver(title)
        return {"title": title, "session_id": session_id, "state_db_existed": existed}


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # Everything Hermes prints goes to stderr; the single JSON object goes to the real stdout.
    real_stdout = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    result: dict = {"_meta": {}}
    meta = result["_meta"]
    home_env = os.environ.get("HERMES_HOME", "").strip()
    if not home_env or not Path(home_env).is_dir():
        meta["error"] = f"HERMES_HOME must name an existing profile directory (got {home_env!r})"
        real_stdout.write(json.dumps(result, sort_keys=True) + "\n")
        real_stdout.flush()
        return 2

    real_home = Path(home_env).resolve()
    pre_env = dict(os.environ)
    tmp, shadow_home = make_shadow(real_home)
    before = _snapshot(shadow_home)
    os.environ["HERMES_HOME"] = str(shadow_home)
    meta.update(
        hermes_home=str(real_home),
        profile=real_home.name if real_home.parent.name == "profiles" else "default",
        python=sys.executable,
        platforms=["cli"] + [p for p in dict.fromkeys(args.platform) if p != "cli"],
        shadow=str(shadow_home) if args.keep_shadow else True,
    )
    try:
        from importlib.metadata import version

        meta["hermes_version"] = version("hermes-agent")
    except Exception as exc:
        meta["hermes_version"] = err(exc)

    probe = Probe(args, real_home, shadow_home, pre_env)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            meta["bootstrap"] = run_with_timeout(probe.bootstrap, max(args.probe_timeout, 60.0))
            try:
                from hermes_cli import managed_scope

                managed = managed_scope.get_managed_dir()
                meta["managed_dir"] = str(managed) if managed else None
            except Exception as exc:
                meta["managed_dir"] = err(exc)
            # Every probe starts from the environment of a freshly started `hermes` process
            # (after .env loading): importing gateway.run, for instance, bridges config values
            # into os.environ and must not leak into the next probe.
            base_env = dict(os.environ)
            # model before timezone: the cron drift check reuses the resolved runtime provider.
            for key in (
                "tools",
                "model",
                "timezone",
                "checkpoints",
                "skills_disabled",
                "mcp",
                "tts",
                "approvals",
                "memory",
                "env",
                "soul",
                "bot_chat",
            ):
                os.environ.clear()
                os.environ.update(base_env)
                result[key] = jsonable(run_with_timeout(getattr(probe, key), args.probe_timeout))
        writes = diff_writes(before, _snapshot(shadow_home))
        # Entries the shadow deliberately did not copy are not Hermes writes.
        writes = [
            w
            for w in writes
            if not (
                w.split(" ", 1)[1].split(os.sep)[0] in _SKIP_PROFILE_ENTRIES
                and (real_home / w.split(" ", 1)[1].split(os.sep)[0]).exists()
            )
            and not w.split(" ", 1)[1].endswith(".lock")
            and not w.split(" ", 1)[1].startswith(os.path.join("cron", "output"))
        ]
        meta["hermes_writes"] = writes[:200]
    finally:
        os.environ["HERMES_HOME"] = home_env
        if not args.keep_shadow:
            shutil.rmtree(tmp, ignore_errors=True)

    ordered = {"_meta": result["_meta"], **{k: result.get(k) for k in PROBE_KEYS}}
    real_stdout.write(json.dumps(ordered, indent=2, sort_keys=False, default=repr) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # Hermes leaves non-daemon threads / atexit hooks behind (logging, MCP loop); don't wait.
    sys.stderr.flush()
    os._exit(code)
