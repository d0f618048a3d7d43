using AgentGovernance.Tests.Support;
using Microsoft.SemanticKernel;
using Microsoft.SemanticKernel.ChatCompletion;

namespace AgentGovernance.Tests;

/// <summary>
/// The OpenAI connector runs its own auto-invocation loop (not the function-invoking chat
/// client's): a denial ends it too. Its model is a local handler answering in the Chat
/// Completions format, so nothing leaves the machine.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class OpenAiConnectorTests(GatewayFixture fixture) : IAsyncLifetime
{
    private readonly Clients clients = new();
    private readonly SemanticKernelTests.FilePlugin files = new();
    private string readerId = "";

    public async Task InitializeAsync() => readerId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-openai", "verified", "finance");

    public async Task DisposeAsync() => await clients.DisposeAsync();

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task A_denied_call_ends_the_connectors_loop(bool throwOnDenied)
    {
        using var model = new ToolCallingModel(
            """{"name":"FilePlugin-WriteFile","arguments":"{\"path\":\"/tmp/out.txt\",\"content\":\"x\"}"}""",
            """{"name":"FilePlugin-ReadFile","arguments":"{\"path\":\"/tmp/notes.txt\"}"}""");
        var kernel = KernelWith(model, throwOnDenied);

        var answer = await ChatAsync(kernel);

        Assert.Equal(1, model.Requests);
        Assert.Empty(files.Calls);
        Assert.Equal("The call FilePlugin.WriteFile was denied by policy trusted-writes: Writes need a trusted agent", answer.Content);
    }

    [Fact]
    public async Task An_allowed_call_runs_and_the_loop_goes_on()
    {
        using var model = new ToolCallingModel("""{"name":"FilePlugin-ReadFile","arguments":"{\"path\":\"/tmp/notes.txt\"}"}""");
        var kernel = KernelWith(model, throwOnDenied: true);

        var answer = await ChatAsync(kernel);

        Assert.Equal(2, model.Requests);
        Assert.Equal(["read /tmp/notes.txt"], files.Calls);
        Assert.Equal("done", answer.Content);
    }

    private Kernel KernelWith(ToolCallingModel model, bool throwOnDenied)
    {
        var options = clients.OptionsFor(fixture, readerId);
        options.ThrowOnDenied = throwOnDenied;
        var builder = Kernel.CreateBuilder();
        builder.AddOpenAIChatCompletion("gpt-test", "sk-test", httpClient: new HttpClient(model));
        var kernel = builder.Build();
        kernel.Plugins.AddFromObject(files, "FilePlugin");
        return kernel.AddAgentGovernance(clients.Create(options));
    }

    private static Task<ChatMessageContent> ChatAsync(Kernel kernel)
    {
        var history = new ChatHistory();
        history.AddUserMessage("Please update /tmp/out.txt");
        return kernel.GetRequiredService<IChatCompletionService>().GetChatMessageContentAsync(history, new PromptExecutionSettings { FunctionChoiceBehavior = FunctionChoiceBehavior.Auto() }, kernel);
    }

    /// <summary>Answers each request with the next tool call, then with the text "done".</summary>
    private sealed class ToolCallingModel(params string[] toolCalls) : HttpMessageHandler
    {
        public int Requests { get; private set; }

        protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            var turn = Requests++;
            var calling = turn < toolCalls.Length;
            var message = calling
                ? $$$"""{"role":"assistant","content":null,"tool_calls":[{"id":"call_{{{turn}}}","type":"function","function":{{{toolCalls[turn]}}}}]}"""
                : """{"role":"assistant","content":"done"}""";
            var body = $$$"""{"id":"chatcmpl-{{{turn}}}","object":"chat.completion","created":1700000000,"model":"gpt-test","choices":[{"index":0,"message":{{{message}}},"finish_reason":"{{{(calling ? "tool_calls" : "stop")}}}"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}""";
            return Task.FromResult(new HttpResponseMessage(System.Net.HttpStatusCode.OK) { Content = new StringContent(body, System.Text.Encoding.UTF8, "application/json") });
        }
    }
}
