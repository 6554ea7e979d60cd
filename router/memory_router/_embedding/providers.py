"""Choosing and building the embedding provider from ``[embedding]`` (OpenClaw's rules).

``provider = "auto"`` tries registered providers by ``auto_priority`` (a provider whose
factory raises :class:`EmbeddingError` is skipped, its reason kept); none left means
keyword-only mode. An explicit provider that fails to build hands over to
``fallback`` (recorded), and fails with both reasons when that fails too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from .._exceptions import ConfigError, EmbeddingError

if TYPE_CHECKING:  # plugins import this module at start-up: keep it light
    from .._config.config import Config
    from .._types import Fallback
    from .embedder import EmbeddingProvider


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderContext:
    """What a provider factory receives: the config and this agent's state folder."""

    config: Config
    state_dir: Path

    @property
    def settings(self):  # type: ignore[no-untyped-def]
        return self.config.embedding


ProviderFactory: TypeAlias = "Callable[[ProviderContext, str], EmbeddingProvider]"
"""``factory(context, model)`` builds a provider; ``model`` is ``""`` for its default."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSpec:
    """An embedding provider as a plugin registers it."""

    name: str
    factory: ProviderFactory
    auto_priority: int | None = None
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderChoice:
    """The outcome of provider selection. ``provider`` is ``None`` in keyword-only mode."""

    provider: EmbeddingProvider | None
    requested: str
    fallback: Fallback | None = None
    unavailable_reason: str | None = None


def _strip_prefix(model: str) -> str:
    for prefix in ("openai/", "gemini/", "google/", "models/", "voyage/", "mistral/", "ollama/"):
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model


def choose_provider(specs: Mapping[str, ProviderSpec], context: ProviderContext) -> ProviderChoice:
    """Build the configured provider (see the module docstring)."""
    settings = context.config.embedding
    requested = settings.provider
    model = _strip_prefix(settings.model)
    if requested in ("none", "off", ""):
        return ProviderChoice(
            provider=None, requested=requested, unavailable_reason="disabled in config"
        )
    if requested == "auto":
        return _choose_auto(specs, context, model)
    fallback = settings.fallback
    if fallback not in ("none", "") and fallback not in specs:
        raise _unknown("fallback embedding provider", fallback, "fallback", specs, context)
    if requested not in specs:
        raise _unknown("embedding provider", requested, "provider", specs, context)
    return _build_or_fall_back(specs, context, requested, model)


def _choose_auto(
    specs: Mapping[str, ProviderSpec], context: ProviderContext, model: str
) -> ProviderChoice:
    """The first provider by ``auto_priority`` that builds; keyword-only, with every
    candidate's reason, when none does."""
    reasons: list[str] = []
    ordered = sorted(
        (s for s in specs.values() if s.auto_priority is not None),
        key=lambda s: (s.auto_priority, s.name),
    )
    for spec in ordered:
        try:
            return ProviderChoice(provider=spec.factory(context, model), requested="auto")
        except EmbeddingError as error:
            reasons.append(f"{spec.name}: {error.message}")
    return ProviderChoice(
        provider=None,
        requested="auto",
        unavailable_reason="; ".join(reasons) or "no embedding provider is installed",
    )


def _unknown(
    what: str, name: str, key: str, specs: Mapping[str, ProviderSpec], context: ProviderContext
) -> ConfigError:
    return ConfigError(
        f"unknown {what} {name!r} (installed: {', '.join(sorted(specs)) or 'none'})",
        path=context.config.file or "<defaults>",
        table="embedding",
        key=key,
    )


def _build_or_fall_back(
    specs: Mapping[str, ProviderSpec], context: ProviderContext, requested: str, model: str
) -> ProviderChoice:
    """The ``requested`` provider; when it fails to build, the configured fallback (the
    switch recorded), or an error with both reasons when that fails too."""
    try:
        return ProviderChoice(
            provider=specs[requested].factory(context, model), requested=requested
        )
    except EmbeddingError as error:
        build_fallback = fallback_factory(specs, context, requested)
        if build_fallback is None:
            raise
        try:
            provider = build_fallback()
        except EmbeddingError as second:
            raise EmbeddingError(
                f"{error.message}; fallback {context.config.embedding.fallback} failed too:"
                f" {second.message}",
                provider=requested,
            ) from None
        from .._types import Fallback

        return ProviderChoice(
            provider=provider,
            requested=requested,
            fallback=Fallback(
                from_=requested, reason=error.message, at=datetime.now(UTC), hint=error.hint
            ),
        )


def fallback_factory(
    specs: Mapping[str, ProviderSpec], context: ProviderContext, primary: str
) -> Callable[[], EmbeddingProvider] | None:
    """A builder for the configured fallback provider, for switching at run time."""
    name = context.config.embedding.fallback
    if name in ("none", "", primary) or name not in specs:
        return None
    spec = specs[name]
    return lambda: spec.factory(context, "")
