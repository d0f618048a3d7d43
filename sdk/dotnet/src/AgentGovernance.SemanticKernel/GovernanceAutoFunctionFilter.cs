using Microsoft.SemanticKernel;

namespace AgentGovernance.SemanticKernel;

/// <summary>
/// Ends the model's auto-invocation loop at a governance denial, so the model cannot go on
/// calling tools. Semantic Kernel turns an exception of an auto-invoked function into a message
/// to the model and carries on, so a thrown <see cref="PolicyDeniedException"/> alone would not
/// stop it: this filter (outside <see cref="GovernanceFunctionFilter"/>, which does the check)
/// sets the call's result to the denial and <c>Terminate</c>.
/// The same for a check that got no decision (a refusal, or the gateway unreachable under
/// fail-closed): the call did not run, and neither will the model's next ones.
/// </summary>
public sealed class GovernanceAutoFunctionFilter : IAutoFunctionInvocationFilter
{
    /// <inheritdoc />
    public async Task OnAutoFunctionInvocationAsync(AutoFunctionInvocationContext context, Func<AutoFunctionInvocationContext, Task> next)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(next);
        try
        {
            await next(context).ConfigureAwait(false);
        }
        catch (PolicyDeniedException denied)
        {
            context.Result = PolicyDenialResult.Create(context.Function, context.Kernel.Culture, denied.PluginName, denied.Decision);
            context.Terminate = true;
            return;
        }
        catch (AgentGovernanceException failure)
        {
            context.Result = new FunctionResult(context.Function, $"The call {context.Function.PluginName}.{context.Function.Name} was not made: no governance decision ({failure.Message})", context.Kernel.Culture);
            context.Terminate = true;
            return;
        }
        if (context.Result.TryGetPolicyDenial(out _)) context.Terminate = true;
    }
}
