using Microsoft.SemanticKernel;

namespace AgentGovernance.SemanticKernel;

/// <summary>
/// Supplies the enriched context of a function call (the user, the tenant, the data class of
/// the conversation...), which policies read as <c>context.&lt;name&gt;</c>. Registered in
/// dependency injection (any number; later ones win on the same name) or passed to
/// <c>kernel.AddAgentGovernance(...)</c>. The application sets the context, never the model: it
/// may only narrow what the model's arguments would be allowed.
/// </summary>
public interface IGovernanceContextProvider
{
    /// <summary>Adds this provider's entries for <paramref name="invocation"/> to <paramref name="context"/>.</summary>
    /// <param name="invocation">The function call about to be checked.</param>
    /// <param name="context">The context sent with the check.</param>
    /// <param name="cancellationToken">The call's cancellation.</param>
    ValueTask AddContextAsync(FunctionInvocationContext invocation, IDictionary<string, object?> context, CancellationToken cancellationToken);
}
