from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DECISION_ALLOW: Decision
DECISION_DENY: Decision
DECISION_PENDING: Decision
DECISION_UNSPECIFIED: Decision
DESCRIPTOR: _descriptor.FileDescriptor

class PolicyChangeEvent(_message.Message):
    __slots__ = ["at", "changed", "kind", "org_id", "policy_version"]
    AT_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ORG_ID_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    at: str
    changed: _containers.RepeatedScalarFieldContainer[str]
    kind: str
    org_id: str
    policy_version: int
    def __init__(self, policy_version: _Optional[int] = ..., changed: _Optional[_Iterable[str]] = ..., kind: _Optional[str] = ..., at: _Optional[str] = ..., org_id: _Optional[str] = ...) -> None: ...

class PolicyRequest(_message.Message):
    __slots__ = ["action", "agent_id", "approval_id", "args", "context", "function", "plugin", "resource", "session_id", "trace_id", "trust_tier"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    TRUST_TIER_FIELD_NUMBER: _ClassVar[int]
    action: str
    agent_id: str
    approval_id: str
    args: _struct_pb2.Struct
    context: _struct_pb2.Struct
    function: str
    plugin: str
    resource: str
    session_id: str
    trace_id: str
    trust_tier: str
    def __init__(self, agent_id: _Optional[str] = ..., action: _Optional[str] = ..., resource: _Optional[str] = ..., plugin: _Optional[str] = ..., function: _Optional[str] = ..., args: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., context: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., trust_tier: _Optional[str] = ..., trace_id: _Optional[str] = ..., approval_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class PolicyResponse(_message.Message):
    __slots__ = ["approval_expires_at", "approval_id", "cache_ttl_ms", "cacheable", "decision", "decision_id", "enforced", "latency_ms", "policy", "policy_version", "reason", "rule", "trace_id"]
    APPROVAL_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CACHEABLE_FIELD_NUMBER: _ClassVar[int]
    CACHE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    ENFORCED_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    approval_expires_at: str
    approval_id: str
    cache_ttl_ms: int
    cacheable: bool
    decision: Decision
    decision_id: str
    enforced: bool
    latency_ms: float
    policy: str
    policy_version: int
    reason: str
    rule: str
    trace_id: str
    def __init__(self, decision: _Optional[_Union[Decision, str]] = ..., reason: _Optional[str] = ..., policy: _Optional[str] = ..., rule: _Optional[str] = ..., policy_version: _Optional[int] = ..., trace_id: _Optional[str] = ..., latency_ms: _Optional[float] = ..., decision_id: _Optional[str] = ..., cacheable: bool = ..., cache_ttl_ms: _Optional[int] = ..., enforced: bool = ..., approval_id: _Optional[str] = ..., approval_expires_at: _Optional[str] = ...) -> None: ...

class PolicySubscription(_message.Message):
    __slots__ = ["org_id", "since_version"]
    ORG_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    org_id: str
    since_version: int
    def __init__(self, org_id: _Optional[str] = ..., since_version: _Optional[int] = ...) -> None: ...

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
