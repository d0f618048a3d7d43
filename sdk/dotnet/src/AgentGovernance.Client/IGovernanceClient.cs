namespace AgentGovernance;

/// <summary>
/// The agent-side adapter of the Agent Governance Service: asks the gateway's policy decision
/// point before a tool call (<see cref="CheckAsync(string, string, IReadOnlyDictionary{string, object?}?, IReadOnlyDictionary{string, object?}?, CancellationToken)"/>), records what the call did after it
/// (<see cref="AuditAsync"/>), or both around a call (<see cref="GuardAsync{T}"/>).
/// </summary>
public interface IGovernanceClient : IAsyncDisposable
{
    /// <summary>
    /// Asks whether the agent may call <paramref name="pluginName"/>.<paramref name="functionName"/> with <paramref name="arguments"/>.
    /// A denial throws <see cref="PolicyDeniedException"/> unless ThrowOnDenied is false for the plugin (then the decision says deny).
    /// A call a <c>require_approval</c> rule holds (docs/approvals.md) throws <see cref="ApprovalPendingException"/>, or, when
    /// ThrowOnDenied is false, answers a decision that <see cref="PolicyDecision.IsPending"/> with its <see cref="PolicyDecision.ApprovalId"/>;
    /// <see cref="GuardAsync{T}"/> waits for such an approval itself.
    /// </summary>
    /// <param name="pluginName">The tool's plugin (policies' <c>match.plugin</c>).</param>
    /// <param name="functionName">The tool's function (policies' <c>match.function</c>).</param>
    /// <param name="arguments">The call's arguments; policies read them as <c>args.&lt;name&gt;</c>.</param>
    /// <param name="context">Enriched context; policies read it as <c>context.&lt;name&gt;</c>. Set by the application, never by the model.</param>
    /// <param name="cancellationToken">Cancels the check; a cancelled check never falls back to the failure mode.</param>
    /// <exception cref="PolicyDeniedException">A policy denied the call and ThrowOnDenied is true (<see cref="ApprovalPendingException"/> when it waits for a person).</exception>
    /// <exception cref="GatewayRejectedException">The gateway refused the question (bad key, unknown or revoked agent, rate limit, bad input).</exception>
    /// <exception cref="GatewayTimeoutException">No answer in time, ThrowOnDenied true and fail-closed.</exception>
    /// <exception cref="GatewayUnavailableException">No gateway could answer and fail-closed.</exception>
    Task<PolicyDecision> CheckAsync(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments = null, IReadOnlyDictionary<string, object?>? context = null, CancellationToken cancellationToken = default);

    /// <summary>
    /// Checks the identical call again presenting <paramref name="approvalId"/>, the approval of an
    /// earlier pending answer: once a person approved it, it lets this call (same agent, plugin,
    /// function and arguments) through, once; anything else is a denial saying why (still pending,
    /// rejected, expired, already used, or asked for another call).
    /// </summary>
    /// <param name="pluginName">The tool's plugin.</param>
    /// <param name="functionName">The tool's function.</param>
    /// <param name="arguments">The call's arguments, as in the pending check.</param>
    /// <param name="context">Enriched context.</param>
    /// <param name="approvalId">The approval (<see cref="ApprovalPendingException.ApprovalId"/>).</param>
    /// <param name="cancellationToken">Cancels the check.</param>
    /// <exception cref="PolicyDeniedException">The approval does not let the call through and ThrowOnDenied is true.</exception>
    Task<PolicyDecision> CheckAsync(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments, IReadOnlyDictionary<string, object?>? context, string approvalId, CancellationToken cancellationToken = default);

    /// <summary>
    /// Waits, at most <paramref name="maxWait"/> (default ApprovalWait, capped at
    /// <see cref="AgentGovernanceOptions.MaxApprovalWait"/>), for a person to decide the approval a
    /// pending check opened, asking <c>GET /v1/approvals/:id</c> with a growing pause between asks
    /// (0.25 s doubling to 5 s). Asking spends nothing: only the retry uses the approval. Answers
    /// <see cref="ApprovalStatus.Pending"/> when the wait ended first; an outage while waiting is
    /// waited out within the same bound.
    /// </summary>
    /// <param name="approvalId">The approval (<see cref="PolicyDecision.ApprovalId"/>).</param>
    /// <param name="maxWait">The longest wait; zero asks once.</param>
    /// <param name="cancellationToken">Ends the wait (throws <see cref="OperationCanceledException"/>).</param>
    /// <exception cref="GatewayRejectedException">The gateway refused to say (an approval unknown in the API key's organization).</exception>
    Task<ApprovalStatus> WaitForApprovalAsync(string approvalId, TimeSpan? maxWait = null, CancellationToken cancellationToken = default);

    /// <summary>Records what a call did: durably in the write-ahead file before returning, sent to the gateway in the next batch. Returns the event's id.</summary>
    Task<string> AuditAsync(AuditRecord record, CancellationToken cancellationToken = default);

    /// <summary>
    /// Checks, runs <paramref name="invocation"/> when allowed, and audits it with its duration and a
    /// summary of its result (or the exception it threw, which is rethrown). A denial throws
    /// <see cref="PolicyDeniedException"/>, or, when ThrowOnDenied is false, returns a
    /// <see cref="GuardResult{T}"/> that <see cref="GuardResult{T}.IsDenied"/> without running the call.
    /// A call a <c>require_approval</c> rule holds waits, at most ApprovalWait, for a person to
    /// decide (docs/approvals.md): approved, the identical call is checked again with the approval,
    /// which lets it through once, and runs; rejected, expired or not decided in time, it is a
    /// denial as above, its reason saying which.
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
