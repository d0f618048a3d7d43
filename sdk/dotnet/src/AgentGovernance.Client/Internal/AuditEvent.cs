namespace AgentGovernance.Internal;

/// <summary>One audit event: its id and the JSON body of <c>POST /v1/audit</c>, byte for byte as written ahead and sent.</summary>
internal sealed record AuditEvent(string EventId, byte[] Json);
