using System.Runtime.CompilerServices;
using Microsoft.Extensions.AI;

namespace AgentGovernance.SemanticKernel;

/// <summary>
/// Around a function-invoking chat client (<c>UseKernelFunctionInvocation()</c>,
/// <c>UseFunctionInvocation()</c>): when the governance filters end the model's loop at a denial,
/// the response ends with an assistant message whose text is the denial's sentence, so a chat
/// pipeline that shows <c>response.Text</c> (or Semantic Kernel's <c>ChatMessageContent.Content</c>)
/// shows why, instead of the empty text of the tool message the loop ended on.
/// Added by <c>builder.UseAgentGovernance()</c> before the function invocation.
/// </summary>
public sealed class GovernanceChatClient : DelegatingChatClient
{
    private static readonly AsyncLocal<StrongBox<string?>?> Ending = new();

    /// <summary>Wraps <paramref name="innerClient"/>.</summary>
    public GovernanceChatClient(IChatClient innerClient)
        : base(innerClient)
    {
    }

    /// <inheritdoc />
    public override async Task<ChatResponse> GetResponseAsync(IEnumerable<ChatMessage> messages, ChatOptions? options = null, CancellationToken cancellationToken = default)
    {
        var ending = new StrongBox<string?>();
        Ending.Value = ending;
        var response = await base.GetResponseAsync(messages, options, cancellationToken).ConfigureAwait(false);
        if (ending.Value is { } sentence) response.Messages.Add(new ChatMessage(ChatRole.Assistant, sentence));
        return response;
    }

    /// <inheritdoc />
    public override async IAsyncEnumerable<ChatResponseUpdate> GetStreamingResponseAsync(IEnumerable<ChatMessage> messages, ChatOptions? options = null, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        var ending = new StrongBox<string?>();
        Ending.Value = ending;
        await foreach (var update in base.GetStreamingResponseAsync(messages, options, cancellationToken).ConfigureAwait(false)) yield return update;
        if (ending.Value is { } sentence) yield return new ChatResponseUpdate(ChatRole.Assistant, sentence);
    }

    /// <summary>Called by <see cref="GovernanceAutoFunctionFilter"/> as it ends a loop: the sentence the response ends with.</summary>
    internal static void Report(string sentence)
    {
        if (Ending.Value is { } ending) ending.Value = sentence;
    }
}

/// <summary>Adds <see cref="GovernanceChatClient"/> to a chat client pipeline.</summary>
public static class GovernanceChatClientBuilderExtensions
{
    /// <summary>
    /// Adds <see cref="GovernanceChatClient"/>: call it before <c>UseKernelFunctionInvocation()</c>
    /// (or <c>UseFunctionInvocation()</c>), so it sits around the loop:
    /// <c>new ChatClientBuilder(model).UseAgentGovernance().UseKernelFunctionInvocation().Build()</c>.
    /// </summary>
    public static ChatClientBuilder UseAgentGovernance(this ChatClientBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        return builder.Use(inner => new GovernanceChatClient(inner));
    }
}
