namespace AgentGovernance;

/// <summary>
/// The agent-side adapter of the Agent Governance Service: asks the gateway's policy decision
/// point before a tool call (<see cref="CheckAsync"/>), records what the call did after it
/// (<see cref="AuditAsync"/>), or both around a call (<see cref="GuardAsync{T}"/>).
/// </summary>
public interface IGovernanceClient : IAsyncDisposable
{
    /// <summary>
    /// Asks whether the agent may call <paramref name="pluginName"/>.<paramref name="functionName"/> with <paramref name="arguments"/>.
    /// A denial throws <see cref="PolicyDeniedException"/> unless ThrowOnDenied is false for the plugin (then the decision says deny).
    /// </summary>
    /// <param name="pluginName">The tool's plugin (policies' <c>match.plugin</c>).</param>
    /// <param name="functionName">The tool's function (policies' <c>match.function</c>).</param>
    /// <param name="arguments">The call's arguments; policies read them as <c>args.&lt;name&gt;</c>.</param>
    /// <param name="context">Enriched context; policies read it as <c>context.&lt;name&gt;</c>. Set by the application, never by the model.</param>
    /// <param name="cancellationToken">Cancels the check; a cancelled check never falls back to the failure mode.</param>
    /// <exception cref="PolicyDeniedException">A policy denied the call and ThrowOnDenied is true.</exception>
    /// <exception cref="GatewayRejectedException">The gateway refused the question (bad key, unknown or revoked agent, rate limit, bad input).</exception>
    /// <exception cref="GatewayTimeoutException">No answer in time, ThrowOnDenied true and fail-closed.</exception>
    /// <exception cref="GatewayUnavailableException">No gateway could answer and fail-closed.</exception>
    Task<PolicyDecision> CheckAsync(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments = null, IReadOnlyDictionary<string, object?>? context = null, CancellationToken cancellationToken = default);

    /// <summary>Records what a call did: durably in the write-ahead file before returning, sent to the gateway in the next batch. Returns the event's id.</summary>
    Task<string> AuditAsync(AuditRecord record, CancellationToken cancellationToken = default);

    /// <summary>
    /// Checks, runs <paramref name="invocation"/> when allowed, and audits it with its duration and a
    /// summary of its result (or the exception it threw, which is rethrown). A denial throws
    /// <see cref="PolicyDeniedException"/>, or, when ThrowOnDenied is false, returns a
    /// <see cref="GuardResult{T}"/> that <see cref="GuardResult{T}.IsDenied"/> without running the call.
    /// </summary>
    /// <param name="pluginName">The tool's plugin.</param>
    /// <param name="functionName">The tool's function.</param>
    /// <param name="arguments">The call's arguments.</param>
    /// <param name="invocation">The call itself.</param>
    /// <param name="context">Enriched context.</param>
    /// <param name="cancellationToken">Cancels the check and is passed to the call.</param>
    Task<GuardResult<T>> GuardAsync<T>(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments, Func<CancellationToken, Task<T>> invocation, IReadOnlyDictionary<string, object?>? context = null, CancellationToken cancellationToken = default);

    /// <summary>Sends every queued audit event now; true when the gateway has acknowledged them all.</summary>
    Task<bool> FlushAuditAsync(CancellationToken cancellationToken = default);

    /// <summary>Audit events written to the write-ahead file but not yet acknowledged by the gateway.</summary>
    int PendingAuditCount { get; }
}
