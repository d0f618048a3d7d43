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
            context.Result = PolicyDenialResult.Create(context.Function, context.Kernel.Culture, denied.PluginName, denied.FunctionName, denied.Decision);
            context.Result = PolicyDenialResult.ForModel(context.Result, denied.Decision);
            End(context);
            return;
        }
        catch (AgentGovernanceException failure)
        {
            context.Result = new FunctionResult(context.Function, $"The call {context.Function.PluginName}.{GovernanceFunctionFilter.FunctionNameOf(context.Function)} was not made: no governance decision ({failure.Message})", context.Kernel.Culture);
            End(context);
            return;
        }
        if (context.Result.TryGetPolicyDenial(out var decision))
        {
            context.Result = PolicyDenialResult.ForModel(context.Result, decision);
            End(context);
        }
    }

    /// <summary>Ends the loop, and tells a <see cref="GovernanceChatClient"/> around it what to answer.</summary>
    private static void End(AutoFunctionInvocationContext context)
    {
        context.Terminate = true;
        GovernanceChatClient.Report(context.Result.ToString());
    }
}
