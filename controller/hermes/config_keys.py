"""The config.yaml keys Hermes 0.19.0 knows, and whether a dotted key is one of them (pure).

KEY_TREE is `hermes_cli/config.py:DEFAULT_CONFIG` as a tree: each mapping's dotted path and its
child keys (a child that is not itself in the tree is a leaf). The four sets after it are the
same file's lists of roots that are read but absent from DEFAULT_CONFIG, or whose children the
user names. `known` walks a key as Hermes' own `_validate_config_key` does for `hermes config set`
(docs/hermes/vocabulary.md#config-keys), with two differences: the roots that Hermes reads
outside DEFAULT_CONFIG (`_EXTRA_KNOWN_ROOT_KEYS`: platform_toolsets, platforms, ...) are known,
and so is anything below a mapping that DEFAULT_CONFIG leaves empty (`terminal.docker_env`,
`agent.reasoning_overrides`): its keys are the user's own. Checked against the installed
hermes-agent by tests/adapters/test_hermes_vocabulary.py.
"""

from __future__ import annotations

import difflib
import functools

KEY_TREE: dict[str, str | tuple[str, ...]] = {
    '': (
        'model providers fallback_providers credential_pool_strategies toolsets max_concurrent_sessions max_live_sessions '
        'agent terminal web browser checkpoints context_file_max_chars file_read_max_chars mcp_discovery_timeout mcp '
        'tool_output tool_loop_guardrails compression kanban prompt_caching openrouter bedrock auxiliary display '
        'dashboard privacy tts stt voice human_delay context memory delegation prefill_messages_file goals moa skills '
        'curator honcho timezone slack discord whatsapp telegram mattermost matrix approvals command_allowlist '
        'quick_commands platform_hints hooks hooks_auto_accept personalities security cron code_execution tools logging '
        'model_catalog network gateway streaming sessions onboarding updates lsp x_search secrets '
        'paste_collapse_threshold paste_collapse_threshold_fallback paste_collapse_char_threshold computer_use desktop '
        'vertex _config_version'
    ),
    'providers': '',
    'credential_pool_strategies': '',
    'agent': (
        'max_turns gateway_timeout restart_drain_timeout api_max_retries service_tier tool_use_enforcement '
        'intent_ack_continuation task_completion_guidance parallel_tool_call_guidance environment_probe '
        'environment_hint coding_context coding_instructions verify_guidance max_verify_nudges verify_on_stop '
        'gateway_timeout_warning clarify_timeout gateway_notify_interval gateway_auto_continue_freshness '
        'local_stream_stale_timeout image_input_mode disabled_toolsets reasoning_overrides'
    ),
    'agent.reasoning_overrides': '',
    'terminal': (
        'backend modal_mode cwd timeout daemon_term_grace_seconds env_passthrough home_mode shell_init_files '
        'auto_source_bashrc docker_image docker_forward_env docker_env singularity_image modal_image '
        'daytona_image container_cpu container_memory container_disk container_persistent docker_volumes '
        'docker_mount_cwd_to_workspace docker_network docker_extra_args docker_run_as_host_user persistent_shell'
    ),
    'terminal.docker_env': '',
    'web': 'backend search_backend extract_backend extract_char_limit',
    'browser': (
        'inactivity_timeout command_timeout record_sessions headed allow_private_urls engine '
        'auto_local_for_private_urls cdp_url allow_unsafe_evaluate restrict_evaluate dialog_policy '
        'dialog_timeout_s camofox'
    ),
    'browser.camofox': (
        'managed_persistence user_id session_key adopt_existing_tab rewrite_loopback_urls '
        'loopback_host_alias'
    ),
    'checkpoints': (
        'enabled max_snapshots max_total_size_mb max_file_size_mb auto_prune retention_days delete_orphans '
        'min_interval_hours'
    ),
    'mcp': 'auto_reload_on_config_change',
    'tool_output': 'max_bytes max_lines max_line_length',
    'tool_loop_guardrails': 'warnings_enabled hard_stop_enabled warn_after hard_stop_after',
    'tool_loop_guardrails.warn_after': 'exact_failure same_tool_failure idempotent_no_progress',
    'tool_loop_guardrails.hard_stop_after': 'exact_failure same_tool_failure idempotent_no_progress',
    'compression': (
        'enabled threshold target_ratio protect_last_n hygiene_hard_message_limit protect_first_n '
        'abort_on_summary_failure codex_gpt55_autoraise codex_gpt55_autoraise_notice codex_app_server_auto '
        'in_place'
    ),
    'kanban': (
        'dispatch_in_gateway dispatch_interval_seconds failure_limit worker_log_rotate_bytes '
        'worker_log_backup_count orchestrator_profile default_assignee max_in_progress_per_profile auto_decompose '
        'auto_decompose_per_tick dispatch_stale_timeout_seconds'
    ),
    'prompt_caching': 'cache_ttl',
    'openrouter': 'response_cache response_cache_ttl min_coding_score',
    'bedrock': 'region discovery guardrail',
    'bedrock.discovery': 'enabled provider_filter refresh_interval',
    'bedrock.guardrail': 'guardrail_identifier guardrail_version stream_processing_mode trace',
    'auxiliary': (
        'transient_retries vision web_extract compression skills_hub approval mcp title_generation '
        'memory_query_rewrite tts_audio_tags triage_specifier kanban_decomposer profile_describer goal_judge '
        'curator monitor background_review moa_reference moa_aggregator'
    ),
    'auxiliary.vision': 'provider model base_url api_key timeout extra_body reasoning_effort download_timeout',
    'auxiliary.vision.extra_body': '',
    'auxiliary.web_extract': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.web_extract.extra_body': '',
    'auxiliary.compression': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.compression.extra_body': '',
    'auxiliary.skills_hub': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.skills_hub.extra_body': '',
    'auxiliary.approval': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.approval.extra_body': '',
    'auxiliary.mcp': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.mcp.extra_body': '',
    'auxiliary.title_generation': 'enabled provider model base_url api_key timeout extra_body reasoning_effort language',
    'auxiliary.title_generation.extra_body': '',
    'auxiliary.memory_query_rewrite': 'provider model base_url api_key timeout extra_body',
    'auxiliary.memory_query_rewrite.extra_body': '',
    'auxiliary.tts_audio_tags': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.tts_audio_tags.extra_body': '',
    'auxiliary.triage_specifier': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.triage_specifier.extra_body': '',
    'auxiliary.kanban_decomposer': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.kanban_decomposer.extra_body': '',
    'auxiliary.profile_describer': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.profile_describer.extra_body': '',
    'auxiliary.goal_judge': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.goal_judge.extra_body': '',
    'auxiliary.curator': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.curator.extra_body': '',
    'auxiliary.monitor': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.monitor.extra_body': '',
    'auxiliary.background_review': 'provider model base_url api_key timeout extra_body reasoning_effort',
    'auxiliary.background_review.extra_body': '',
    'auxiliary.moa_reference': 'provider model base_url api_key timeout extra_body',
    'auxiliary.moa_reference.extra_body': '',
    'auxiliary.moa_aggregator': 'provider model base_url api_key timeout extra_body',
    'auxiliary.moa_aggregator.extra_body': '',
    'display': (
        'compact personality resume_display resume_exchanges resume_max_user_chars resume_max_assistant_chars '
        'resume_max_assistant_lines resume_skip_tool_only busy_input_mode busy_steer_ack_enabled interface '
        'tui_auto_resume_recent tui_agents_nudge bell_on_complete show_reasoning reasoning_full '
        'memory_notifications streaming timestamps timestamp_format final_response_markdown persistent_output '
        'persistent_output_max_lines persist_prompts inline_diffs file_mutation_verifier credits_notices '
        'turn_completion_explainer show_cost skin language tui_status_indicator cli_refresh_interval '
        'user_message_preview interim_assistant_messages show_commentary tool_progress_command '
        'tool_progress_overrides tool_preview_length friendly_tool_labels tool_progress_grouping status_phrases '
        'reasoning_style ephemeral_system_ttl platforms runtime_footer copy_shortcut pet'
    ),
    'display.user_message_preview': 'first_lines last_lines',
    'display.tool_progress_overrides': '',
    'display.status_phrases': '',
    'display.platforms': 'telegram discord',
    'display.platforms.telegram': 'streaming',
    'display.platforms.discord': 'streaming',
    'display.runtime_footer': 'enabled fields',
    'display.pet': 'enabled slug render_mode scale unicode_cols',
    'dashboard': (
        'theme turn_isolation compute_host_heartbeat_secs compute_host_respawn_max show_token_analytics oauth '
        'basic_auth drain_auth public_url'
    ),
    'dashboard.oauth': 'client_id portal_url',
    'dashboard.basic_auth': 'username password_hash password secret session_ttl_seconds',
    'dashboard.drain_auth': 'scope min_secret_chars',
    'privacy': 'redact_pii',
    'tts': 'provider edge elevenlabs openai gemini xai mistral minimax kittentts neutts piper deepinfra',
    'tts.edge': 'voice',
    'tts.elevenlabs': 'voice_id model_id',
    'tts.openai': 'model voice',
    'tts.gemini': 'model voice audio_tags persona_prompt_file',
    'tts.xai': 'voice_id language speed auto_speech_tags optimize_streaming_latency sample_rate bit_rate',
    'tts.mistral': 'model voice_id',
    'tts.minimax': 'model voice_id',
    'tts.kittentts': 'model voice',
    'tts.neutts': 'ref_audio ref_text model device',
    'tts.piper': 'voice',
    'tts.deepinfra': 'model voice',
    'stt': 'enabled echo_transcripts provider local openai mistral elevenlabs deepinfra',
    'stt.local': 'model language',
    'stt.openai': 'model',
    'stt.mistral': 'model',
    'stt.elevenlabs': 'model_id language_code tag_audio_events diarize',
    'stt.deepinfra': 'model',
    'voice': 'record_key max_recording_seconds auto_tts beep_enabled silence_threshold silence_duration',
    'human_delay': 'mode min_ms max_ms',
    'context': 'engine',
    'memory': 'memory_enabled user_profile_enabled write_approval memory_char_limit user_char_limit provider',
    'delegation': (
        'model provider base_url api_key api_mode inherit_mcp_toolsets max_iterations max_summary_chars '
        'child_timeout_seconds reasoning_effort max_concurrent_children max_spawn_depth orchestrator_enabled '
        'subagent_auto_approve'
    ),
    'goals': 'max_turns',
    'moa': 'default_preset active_preset save_traces trace_dir presets',
    'moa.presets': 'default',
    'moa.presets.default': 'reference_models aggregator max_tokens enabled',
    'moa.presets.default.aggregator': 'provider model',
    'skills': 'external_dirs template_vars inline_shell inline_shell_timeout guard_agent_created write_approval',
    'curator': (
        'enabled interval_hours min_idle_hours stale_after_days archive_after_days consolidate prune_builtins '
        'backup'
    ),
    'curator.backup': 'enabled keep',
    'honcho': '',
    'slack': 'require_mention free_response_channels allowed_channels channel_prompts',
    'slack.channel_prompts': '',
    'discord': (
        'require_mention free_response_channels allowed_channels auto_thread thread_require_mention '
        'bots_require_inline_mention history_backfill history_backfill_limit missed_message_backfill reactions '
        'websocket_liveness_interval_seconds websocket_liveness_failure_threshold '
        'websocket_heartbeat_ack_max_age_seconds websocket_max_latency_seconds channel_prompts dm_role_auth_guild '
        'server_actions allow_any_attachment max_attachment_bytes approval_mentions voice_fx'
    ),
    'discord.missed_message_backfill': 'enabled channels window_seconds limit max_dispatches',
    'discord.channel_prompts': '',
    'discord.voice_fx': 'enabled ambient_enabled ambient_path ambient_gain duck_gain speech_gain ack_enabled ack_phrases',
    'whatsapp': '',
    'telegram': 'reactions channel_prompts allowed_chats extra',
    'telegram.channel_prompts': '',
    'telegram.extra': 'rich_messages rich_drafts',
    'mattermost': 'require_mention free_response_channels allowed_channels channel_prompts',
    'mattermost.channel_prompts': '',
    'matrix': 'require_mention free_response_rooms allowed_rooms',
    'approvals': 'mode timeout cron_mode deny mcp_reload_confirm destructive_slash_confirm',
    'quick_commands': '',
    'platform_hints': '',
    'hooks': '',
    'personalities': '',
    'security': (
        'allow_private_urls redact_secrets tirith_enabled tirith_path tirith_timeout tirith_fail_open '
        'website_blocklist acked_advisories allow_lazy_installs'
    ),
    'security.website_blocklist': 'enabled domains shared_files',
    'cron': 'provider chronos wrap_response mirror_delivery max_parallel_jobs output_retention session_db_timeout_seconds',
    'cron.chronos': 'portal_url callback_url expected_audience nas_jwks_url',
    'code_execution': 'mode',
    'tools': 'tool_search',
    'tools.tool_search': 'enabled threshold_pct search_default_limit max_search_limit',
    'logging': 'level max_size_mb backup_count',
    'model_catalog': 'enabled url ttl_hours providers',
    'model_catalog.providers': '',
    'network': 'force_ipv4',
    'gateway': (
        'delivery_ledger platform_connect_timeout write_sessions_json scale_to_zero restart_loop_guard '
        'respawn_storm message_timestamps max_inbound_media_bytes strict media_delivery_allow_dirs '
        'trust_recent_files trust_recent_files_seconds api_server'
    ),
    'gateway.scale_to_zero': 'idle_timeout_minutes',
    'gateway.restart_loop_guard': 'max_restarts window_seconds',
    'gateway.respawn_storm': 'max_starts window_seconds',
    'gateway.message_timestamps': 'enabled',
    'gateway.api_server': 'max_concurrent_runs',
    'streaming': 'enabled transport edit_interval buffer_threshold cursor fresh_final_after_seconds',
    'sessions': 'auto_prune retention_days vacuum_after_prune min_interval_hours write_json_snapshots',
    'onboarding': 'seen profile_build',
    'onboarding.seen': '',
    'updates': 'pre_update_backup backup_keep non_interactive_local_changes refresh_cua_driver',
    'lsp': 'enabled wait_mode wait_timeout install_strategy servers',
    'lsp.servers': '',
    'x_search': 'model reasoning_effort timeout_seconds retries',
    'secrets': 'bitwarden onepassword',
    'secrets.bitwarden': 'enabled access_token_env project_id cache_ttl_seconds override_existing auto_install server_url',
    'secrets.onepassword': 'enabled env account service_account_token_env binary_path cache_ttl_seconds override_existing',
    'secrets.onepassword.env': '',
    'computer_use': 'cua_telemetry',
    'desktop': 'electron_flags disable_gpu',
    'vertex': 'project_id region',
}  # fmt: skip

# `_EXTRA_KNOWN_ROOT_KEYS`: roots read from the raw config.yaml, absent from DEFAULT_CONFIG.
EXTRA_ROOTS = frozenset({
    "always_log_local", "custom_providers", "fallback_model", "filter_silence_narration", "group_sessions_per_user",
    "image_gen", "known_plugin_toolsets", "mcp_servers", "multiplex_profiles", "platform_toolsets", "platforms",
    "plugins", "profile_routes", "require_mention", "reset_triggers", "session_reset", "signal", "smart_model_routing",
    "stt_echo_transcripts", "thread_sessions_per_user", "unauthorized_dm_behavior", "video_gen",
})  # fmt: skip
# `_OPEN_DICT_TOP_LEVEL_KEYS`: roots whose children the user names (servers, providers, hooks).
OPEN_ROOTS = frozenset({
    "channel_prompts", "command_allowlist", "credential_pool_strategies", "goals", "hooks", "mcp_servers",
    "model_catalog", "personalities", "providers", "quick_commands", "secrets", "server_actions",
})  # fmt: skip
# `_SCHEMA_DEFINED_DICT_KEYS` and `_DYNAMIC_TOP_LEVEL_KEYS`: roots checked by their first segment only.
FIRST_SEGMENT_ROOTS = frozenset({
    "bluebubbles", "checkpoints", "dingtalk", "discord", "email", "feishu", "matrix", "mattermost", "qqbot",
    "sessions", "signal", "slack", "sms", "telegram", "wecom", "weixin", "whatsapp", "yuanbao", "custom_providers",
})  # fmt: skip
# `_PLATFORM_CONTAINER_KEYS`: below this segment, at any depth, names are platform names.
PLATFORM_CONTAINERS = frozenset({"platforms"})
# Keys that no 0.19.0 reader sees but the rooms gateway hermes-fleet drives reads
# (docs/hermes/gateway.md: fork@0b6fb69, gateway/hosted_room_peer.py:_configured_room_link_url).
ROOMS_GATEWAY_KEYS = frozenset({"gateway.room_link_url"})


@functools.cache
def _children(branch: str) -> frozenset[str]:
    names = KEY_TREE[branch]
    return frozenset("".join(names).split()) if isinstance(names, tuple) else frozenset(names.split())


def roots() -> frozenset[str]:
    return _children("") | EXTRA_ROOTS | OPEN_ROOTS | FIRST_SEGMENT_ROOTS | PLATFORM_CONTAINERS


@functools.lru_cache(maxsize=4096)
def unknown(dotted: str) -> tuple[str, str | None] | None:
    """None when Hermes 0.19.0 knows `dotted`; else (the first unknown segment's path, the closest
    known key there or None)."""
    segments = dotted.split(".")
    top = segments[0]
    if dotted in ROOMS_GATEWAY_KEYS or top.startswith("_") or top in PLATFORM_CONTAINERS:
        return None
    if top not in roots():
        return top, _closest(top, roots(), ".".join(segments[1:]))
    if top in EXTRA_ROOTS | OPEN_ROOTS | FIRST_SEGMENT_ROOTS:
        return None
    path = top
    for segment in segments[1:]:
        if segment in PLATFORM_CONTAINERS or path not in KEY_TREE or not _children(path):
            return None  # a leaf (Hermes accepts keys below it), or a mapping the user fills
        if segment not in _children(path):
            return f"{path}.{segment}", _closest(f"{path}.{segment}", {f"{path}.{c}" for c in _children(path)}, "")
        path = f"{path}.{segment}"
    return None


def _closest(name: str, options: set[str] | frozenset[str], rest: str) -> str | None:
    guess = difflib.get_close_matches(name, sorted(options), n=1, cutoff=0.6)
    if not guess:
        return None
    return f"{guess[0]}.{rest}" if rest else guess[0]
