"""`watch`: the reconciler as a verb (sources from the arguments, exit codes for --once)."""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.adapters import fsio, outbox, watchlock, webhooks
from controller.adapters.home import HomeLayout, resolve_root
from controller.adapters.sources import GitSource, LocalSource
from controller.codes import WatchResult
from controller.engine import healthserver, watching, watchsignals, watchstatus
from controller.errors import ExitCode, SecretUnavailable, UsageError
from controller.manifests import references
from controller.manifests.desired import EnvEntry
from controller.manifests.models import SecretRef
from controller.verbs.common import check_fleet, check_host, selection

MIN_TOKEN = 16


def build_source(args: argparse.Namespace, root: Path, log: watching.Log | None = None) -> LocalSource | GitSource:
    if args.git:
        if not args.git_timeout > 0:
            raise UsageError("--git-timeout must be more than 0 (a git command needs some time)")
        return GitSource(
            args.git,
            ref=args.ref,
            path=args.path,
            cache_root=HomeLayout(root).state.git,
            ssh_key=args.ssh_key,
            timeout=args.git_timeout,
            log=log.event if log else lambda _name, **_fields: None,
        )
    if not args.files:
        raise UsageError("watch needs -f PATH or --git URL")
    return LocalSource(args.files, recursive=True)  # folders are read with their sub-folders, as in apply


def cmd_watch(args: argparse.Namespace) -> int:
    check_fleet(args.fleet)
    check_host(args.host)
    root = resolve_root(args.home)
    options = watching.Options(
        interval=args.interval,
        self_heal=args.self_heal,
        prune=args.prune,
        yes=args.yes,
        fleet=args.fleet,
        host=args.host,
        lock_timeout=args.lock_timeout,
        allow_history_rewrite=args.allow_history_rewrite,
        rooms=not args.no_rooms,
        full_every=args.full_every,
        selection=selection(args),  # a bad --bot or -l is refused here, before the lock
    )
    token = health_token(args)
    log = watching.Log(args.log_format)
    source = build_source(args, root, log)
    fsio.make_dirs(root, mode=0o700)  # a read-only parent: a clean error naming the path
    with watchlock.reconciler_lock(root):
        # Events a killed or stopped watcher (or apply --notify) left undelivered go out again.
        notifier = webhooks.Notifier(log.event, outbox=outbox.Outbox(root, log.event))
        reconciler = watching.Reconciler(root, source, options, log, notifier=notifier)
        if isinstance(source, GitSource):
            source.should_stop = reconciler.stop.is_set  # SIGTERM ends a running git command at once
        watchstatus.resume(reconciler, watchstatus.read_status(root))
        if args.once:
            try:
                run = reconciler.reconcile("once")
                reconciler.write_status()
            finally:
                notifier.close(timeout=args.notify_timeout)
            return once_exit(run)
        watchsignals.install_signals(reconciler, log)
        server = None
        if args.health_port is not None:
            server = healthserver.start_health(args.health_port, reconciler, log, bind=args.health_bind, token=token)
        log.event(
            "started",
            home=str(root),
            source=watchstatus.source_label(source),
            mode="self-heal" if options.self_heal else "report",
            interval=options.interval,
            rooms="on" if options.rooms else "off",
            selection=options.selection.describe(),  # left out when empty: every bot
        )
        try:
            reconciler.loop()
        finally:
            if server is not None:
                server.shutdown()
            notifier.close(timeout=args.notify_timeout)
    return ExitCode.OK


def health_token(args: argparse.Namespace) -> str | None:
    """The bearer token for /healthz and /metrics, by reference (never on the command line).

    Loopback needs none; any other --health-bind refuses to start without one."""
    env, file = getattr(args, "health_token_env", None), getattr(args, "health_token_file", None)
    if env and file:
        raise UsageError("give one of --health-token-env and --health-token-file")
    bind = getattr(args, "health_bind", "127.0.0.1")
    if not env and not file:
        if not healthserver.is_loopback(bind):
            raise UsageError(
                f"refusing to serve /healthz and /metrics on {bind} without a token",
                hint="add --health-token-env NAME or --health-token-file FILE (a secret of 16 or more characters)",
            )
        return None
    ref = SecretRef(from_env=env) if env else SecretRef(from_file=file)
    try:
        token = references.resolve(EnvEntry(ref=ref, base_dir=str(Path.cwd())))
    except SecretUnavailable as exc:
        raise UsageError(f"the health token: {exc}") from None
    token = token.strip()
    if len(token) < MIN_TOKEN or any(c.isspace() for c in token):
        raise UsageError(f"the health token must be at least {MIN_TOKEN} characters, without spaces")
    return token


ONCE_EXIT: dict[WatchResult, ExitCode] = {  # total: tests/unit/test_codes.py checks every result has one
    WatchResult.APPLIED: ExitCode.OK,
    WatchResult.IN_SYNC: ExitCode.OK,
    WatchResult.DRIFT: ExitCode.OK,
    WatchResult.STALLED: ExitCode.BAD_INPUT,
    WatchResult.CONFLICT: ExitCode.CONFLICT,
    WatchResult.BUSY: ExitCode.CONFLICT,
    WatchResult.PARTIAL: ExitCode.FAILED,
    WatchResult.SOURCE_ERROR: ExitCode.FAILED,
    WatchResult.INTERRUPTED: ExitCode.FAILED,
    WatchResult.SUSPENDED: ExitCode.OK,  # planned and reported; the suspension is the operator's choice
}


def once_exit(run: watching.Run) -> int:
    return int(ONCE_EXIT[run.result])
