"""For agent hosts: what an agent loop calls around a model turn.

:func:`recall_block` searches memory for a prompt and renders the hits as a block to put
before it; :func:`capture` stores what the user said that is worth keeping;
:func:`check_memory_flush` decides when the silent pre-compaction turn runs, and
:func:`is_silent_reply` recognises its :data:`NO_REPLY` answer. Their settings are the
``[recall]``, ``[capture]``, ``[compaction]`` and ``[serve]`` tables of :class:`Config`.
See docs/agents.md.

The export list is the ``if TYPE_CHECKING:`` block below, written once (see
:mod:`memory_router`); names are imported on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.lazy import public_api

if TYPE_CHECKING:
    from ._agent.capture import CaptureResult as CaptureResult
    from ._agent.capture import RecallBlock as RecallBlock
    from ._agent.capture import capture as capture
    from ._agent.capture import recall_block as recall_block
    from ._agent.flush import NO_REPLY as NO_REPLY
    from ._agent.flush import FlushDecision as FlushDecision
    from ._agent.flush import check_memory_flush as check_memory_flush
    from ._agent.flush import is_silent_reply as is_silent_reply
    from ._config.agent import CaptureConfig as CaptureConfig
    from ._config.agent import CompactionConfig as CompactionConfig
    from ._config.agent import MemoryFlushConfig as MemoryFlushConfig
    from ._config.agent import RecallConfig as RecallConfig
    from ._config.agent import ServeConfig as ServeConfig
else:
    __all__, __getattr__, __dir__ = public_api(__name__)
