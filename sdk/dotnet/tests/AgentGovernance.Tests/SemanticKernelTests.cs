using System.ComponentModel;
using AgentGovernance.SemanticKernel;
using AgentGovernance.Tests.Support;
using Microsoft.Extensions.AI;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.SemanticKernel;
using Microsoft.SemanticKernel.ChatCompletion;

namespace AgentGovernance.Tests;

/// <summary>
/// The Semantic Kernel filters with a real <see cref="Kernel"/> and plugins, no model: functions
/// invoked directly, and auto-invocation driven by a chat client of the test's own that asks
/// for tool calls, run by Semantic Kernel's own function-calling loop.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class SemanticKernelTests(GatewayFixture fixture) : IAsyncLifetime
{
    private readonly Clients clients = new();
    private readonly FilePlugin files = new();
    private string readerId = "";

    /// <summary>A verified agent: it may read ordinary files, and trusted-writes denies its writes.</summary>
    public async Task InitializeAsync() => readerId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-sk", "verified", "finance");

    public async Task DisposeAsync() => await clients.DisposeAsync();

    private Kernel GovernedKernel(Action<AgentGovernanceOptions>? configure = null, params IGovernanceContextProvider[] providers)
    {
        var options = clients.OptionsFor(fixture, readerId);
        configure?.Invoke(options);
        var kernel = Kernel.CreateBuilder().Build();
        kernel.Plugins.AddFromObject(files, "FilePlugin");
        kernel.Plugins.AddFromType<CrmPlugin>("CrmPlugin");
        return kernel.AddAgentGovernance(clients.Create(options), providers);
    }

    [Fact]
    public async Task An_allowed_function_runs_and_is_audited_with_its_duration_and_result_summary()
    {
        var kernel = GovernedKernel();

        var result = await kernel.InvokeAsync("FilePlugin", "ReadFile", new KernelArguments { ["path"] = "/tmp/notes.txt" });

        Assert.Equal("contents of /tmp/notes.txt", result.GetValue<string>());
        Assert.Equal(["read /tmp/notes.txt"], files.Calls);
        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(readerId, 1));
        Assert.Equal(("FilePlugin.ReadFile", "allow"), (outcome.GetProperty("action").GetString(), outcome.GetProperty("decision").GetString()));
        var details = outcome.GetProperty("details");
        Assert.Equal("returned string of 26 characters", details.GetProperty("resultSummary").GetString());
        Assert.True(details.GetProperty("durationMs").GetDouble() >= 0);
        Assert.StartsWith("aud_", details.GetProperty("decisionId").GetString(), StringComparison.Ordinal);
        Assert.Equal("/tmp/notes.txt", outcome.GetProperty("input").GetProperty("args").GetProperty("path").GetString());
    }

    [Fact]
    public async Task A_denied_function_throws_with_the_policy_and_never_runs()
    {
        var kernel = GovernedKernel();

        var denied = await Assert.ThrowsAsync<PolicyDeniedException>(() => kernel.InvokeAsync("FilePlugin", "WriteFile", new KernelArguments { ["path"] = "/tmp/out.txt", ["content"] = "x" }));

        Assert.Equal(("trusted-writes", "needs-trusted", "Writes need a trusted agent"), (denied.Policy, denied.Rule, denied.Reason));
        Assert.Empty(files.Calls);
    }

    [Fact]
    public async Task With_ThrowOnDenied_false_a_denied_function_returns_the_soft_result_and_never_runs()
    {
        var kernel = GovernedKernel(options => options.Plugins["FilePlugin"] = new PluginGovernanceOptions { ThrowOnDenied = false });

        var result = await kernel.InvokeAsync("FilePlugin", "WriteFile", new KernelArguments { ["path"] = "/tmp/out.txt", ["content"] = "x" });

        Assert.True(result.TryGetPolicyDenial(out var decision));
        Assert.Equal("trusted-writes", decision.Policy);
        Assert.Equal("The call FilePlugin.WriteFile was denied by policy trusted-writes: Writes need a trusted agent", result.GetValue<string>());
        Assert.Empty(files.Calls);
        Assert.False((await kernel.InvokeAsync("FilePlugin", "ReadFile", new KernelArguments { ["path"] = "/tmp/a" })).TryGetPolicyDenial(out _));
    }

    [Fact]
    public async Task A_context_provider_enriches_the_check_as_context_properties()
    {
        var kernel = GovernedKernel(null, new DataClassProvider("pii"));

        var denied = await Assert.ThrowsAsync<PolicyDeniedException>(() => kernel.InvokeAsync("CrmPlugin", "GetCustomer", new KernelArguments { ["id"] = "cus_1" }));

        Assert.Equal("pii-guard", denied.Policy);
        var publicData = GovernedKernel(null, new DataClassProvider("public"));
        Assert.Equal("customer cus_1", (await publicData.InvokeAsync("CrmPlugin", "GetCustomer", new KernelArguments { ["id"] = "cus_1" })).GetValue<string>());
    }

    [Fact]
    public async Task A_call_the_model_makes_runs_when_allowed_and_the_loop_goes_on()
    {
        var kernel = GovernedKernel();
        var model = new ScriptedModel(
            tools => ScriptedModel.Call(tools, "ReadFile", new() { ["path"] = "/tmp/notes.txt" }),
            _ => new ChatResponse(new ChatMessage(ChatRole.Assistant, "The notes are read.")));

        var answer = await ChatAsync(kernel, model);

        Assert.Equal("The notes are read.", answer.Content);
        Assert.Equal(2, model.Calls);
        Assert.Equal(["read /tmp/notes.txt"], files.Calls);
        Assert.Contains("contents of /tmp/notes.txt", model.ToolResults);
        Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(readerId, 1));
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task A_denied_call_the_model_makes_ends_the_auto_invocation_loop(bool throwOnDenied)
    {
        var kernel = GovernedKernel(options => options.ThrowOnDenied = throwOnDenied);
        // Were the loop to go on, the model would next read a file, then answer.
        var model = new ScriptedModel(
            tools => ScriptedModel.Call(tools, "WriteFile", new() { ["path"] = "/tmp/out.txt", ["content"] = "x" }),
            tools => ScriptedModel.Call(tools, "ReadFile", new() { ["path"] = "/tmp/notes.txt" }),
            _ => new ChatResponse(new ChatMessage(ChatRole.Assistant, "done")));

        var answer = await ChatAsync(kernel, model);

        Assert.Equal(1, model.Calls);
        Assert.Empty(files.Calls);
        // What the caller gets back is the denied call's result, as Semantic Kernel ends a terminated loop.
        Assert.Equal(AuthorRole.Tool, answer.Role);
        var result = Assert.Single(answer.Items.OfType<Microsoft.SemanticKernel.FunctionResultContent>());
        Assert.Equal("The call FilePlugin.WriteFile was denied by policy trusted-writes: Writes need a trusted agent", result.Result);
    }

    [Fact]
    public async Task One_line_of_dependency_injection_governs_a_kernel_from_configuration()
    {
        var configuration = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["AgentGovernance:GatewayUrl"] = fixture.Gateway.Url.ToString(),
            ["AgentGovernance:GrpcAddress"] = fixture.Gateway.GrpcAddress,
            ["AgentGovernance:ApiKey"] = fixture.ApiKey,
            ["AgentGovernance:AgentId"] = readerId,
            ["AgentGovernance:AuditWalPath"] = Path.Combine(clients.WalDirectory, "di.wal"),
            ["AgentGovernance:Plugins:FilePlugin:ThrowOnDenied"] = "false",
        }).Build();
        var services = new ServiceCollection();
        services.AddKernel().Plugins.AddFromObject(files, "FilePlugin");
        services.AddAgentGovernance(configuration);
        await using var provider = services.BuildServiceProvider();
        var kernel = provider.GetRequiredService<Kernel>();

        var denied = await kernel.InvokeAsync("FilePlugin", "WriteFile", new KernelArguments { ["path"] = "/tmp/out.txt", ["content"] = "x" });
        var allowed = await kernel.InvokeAsync("FilePlugin", "ReadFile", new KernelArguments { ["path"] = "/tmp/a" });

        Assert.True(denied.TryGetPolicyDenial(out _));
        Assert.Equal("contents of /tmp/a", allowed.GetValue<string>());
        Assert.Contains(kernel.FunctionInvocationFilters, filter => filter is GovernanceFunctionFilter);
        Assert.Contains(kernel.AutoFunctionInvocationFilters, filter => filter is GovernanceAutoFunctionFilter);
    }

    [Fact]
    public async Task A_soft_denial_of_a_typed_function_answers_its_type_and_InvokeGuardedAsync_says_it_was_denied()
    {
        var kernel = GovernedKernel(options => options.ThrowOnDenied = false);

        var total = await kernel.InvokeAsync<decimal>("FilePlugin", "WriteTotal", new KernelArguments { ["amount"] = 12.5m });
        var guarded = await kernel.InvokeGuardedAsync<decimal>("FilePlugin", "WriteTotal", new KernelArguments { ["amount"] = 12.5m });
        var read = await kernel.InvokeGuardedAsync<decimal>("FilePlugin", "ReadTotal");

        Assert.Equal(0m, total);
        Assert.True(guarded.IsDenied);
        Assert.Equal(("trusted-writes", "Writes need a trusted agent"), (guarded.Decision.Policy, guarded.Decision.Reason));
        Assert.False(read.IsDenied);
        Assert.Equal(42m, read.Value);
        Assert.StartsWith("aud_", read.Decision.DecisionId, StringComparison.Ordinal);
        Assert.Equal(["read total"], files.Calls);
    }

    [Fact]
    public async Task A_prompt_invoked_directly_is_checked_under_one_stable_name_a_policy_can_match()
    {
        await fixture.Gateway.PutPolicyAsync("sdk-dotnet-prompts", $$"""
            name: sdk-dotnet-prompts
            match: { plugin: Kernel, function: Prompt }
            rules:
              - name: no-prompts
                condition: agent.id == "{{readerId}}"
                action: deny
                reason: No prompts for this agent
            """);
        try
        {
            var kernel = GovernedKernel();

            var first = await Assert.ThrowsAsync<PolicyDeniedException>(() => kernel.InvokePromptAsync("Summarize the notes"));
            var second = await Assert.ThrowsAsync<PolicyDeniedException>(() => kernel.InvokePromptAsync("Summarize the notes again"));

            Assert.Equal(("Kernel", "Prompt", "sdk-dotnet-prompts"), (first.PluginName, first.FunctionName, first.Policy));
            Assert.Equal(first.FunctionName, second.FunctionName);
        }
        finally
        {
            await fixture.Gateway.DeletePolicyAsync("sdk-dotnet-prompts");
        }
    }

    [Fact]
    public async Task The_governance_filter_runs_before_a_filter_registered_ahead_of_it()
    {
        var configuration = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["AgentGovernance:GatewayUrl"] = fixture.Gateway.Url.ToString(),
            ["AgentGovernance:GrpcAddress"] = fixture.Gateway.GrpcAddress,
            ["AgentGovernance:ApiKey"] = fixture.ApiKey,
            ["AgentGovernance:AgentId"] = readerId,
            ["AgentGovernance:AuditWalPath"] = Path.Combine(clients.WalDirectory, "order.wal"),
        }).Build();
        var answering = new AnsweringFilter();
        var services = new ServiceCollection();
        services.AddSingleton<IFunctionInvocationFilter>(answering);
        services.AddKernel().Plugins.AddFromObject(files, "FilePlugin");
        services.AddAgentGovernance(configuration);
        await using var provider = services.BuildServiceProvider();
        var kernel = provider.GetRequiredService<Kernel>();

        await Assert.ThrowsAsync<PolicyDeniedException>(() => kernel.InvokeAsync("FilePlugin", "WriteFile", new KernelArguments { ["path"] = "/tmp/out.txt", ["content"] = "x" }));
        var read = await kernel.InvokeAsync("FilePlugin", "ReadFile", new KernelArguments { ["path"] = "/tmp/a" });

        // Had it run first, the answering filter would have answered the denied write itself.
        Assert.Equal(["ReadFile"], answering.Seen);
        Assert.Equal("answered by the filter", read.GetValue<string>());
        Assert.IsType<GovernanceFunctionFilter>(kernel.FunctionInvocationFilters[0]);
    }

    [Fact]
    public async Task In_a_chat_pipeline_with_UseAgentGovernance_the_answer_to_a_denied_call_is_the_denial_sentence()
    {
        var kernel = GovernedKernel();
        var model = new ScriptedModel(
            tools => ScriptedModel.Call(tools, "WriteFile", new() { ["path"] = "/tmp/out.txt", ["content"] = "x" }),
            _ => new ChatResponse(new ChatMessage(ChatRole.Assistant, "done")));

        var answer = await ChatAsync(kernel, model, governed: true);

        Assert.Equal(1, model.Calls);
        Assert.Empty(files.Calls);
        Assert.Equal(AuthorRole.Assistant, answer.Role);
        Assert.Equal("The call FilePlugin.WriteFile was denied by policy trusted-writes: Writes need a trusted agent", answer.Content);
    }

    private static async Task<ChatMessageContent> ChatAsync(Kernel kernel, ScriptedModel model, bool governed = false)
    {
        var builder = new ChatClientBuilder(model);
        if (governed) builder.UseAgentGovernance();
        var chat = builder.UseKernelFunctionInvocation().Build().AsChatCompletionService();
        var history = new ChatHistory("You manage files.");
        history.AddUserMessage("Please update /tmp/out.txt");
        return await chat.GetChatMessageContentAsync(history, new PromptExecutionSettings { FunctionChoiceBehavior = FunctionChoiceBehavior.Auto() }, kernel);
    }

    /// <summary>A plugin of two functions: the policies allow reading an ordinary file and deny a verified agent's writes.</summary>
    public sealed class FilePlugin
    {
        public List<string> Calls { get; } = [];

        [KernelFunction, Description("Reads a file")]
        public string ReadFile(string path)
        {
            Calls.Add($"read {path}");
            return $"contents of {path}";
        }

        [KernelFunction, Description("Writes a file")]
        public string WriteFile(string path, string content)
        {
            Calls.Add($"write {path}");
            return $"wrote {content.Length} characters";
        }

        [KernelFunction, Description("Reads the total")]
        public decimal ReadTotal()
        {
            Calls.Add("read total");
            return 42m;
        }

        [KernelFunction, Description("Writes the total")]
        public decimal WriteTotal(decimal amount)
        {
            Calls.Add("write total");
            return amount;
        }
    }

    /// <summary>A filter that answers reads itself without running them (a cache, say), and lets anything else through.</summary>
    private sealed class AnsweringFilter : IFunctionInvocationFilter
    {
        public List<string> Seen { get; } = [];

        public async Task OnFunctionInvocationAsync(Microsoft.SemanticKernel.FunctionInvocationContext context, Func<Microsoft.SemanticKernel.FunctionInvocationContext, Task> next)
        {
            Seen.Add(context.Function.Name);
            if (context.Function.Name == "ReadFile") context.Result = new FunctionResult(context.Function, "answered by the filter");
            else await next(context);
        }
    }

    public sealed class CrmPlugin
    {
        [KernelFunction, Description("Gets a customer")]
        public static string GetCustomer(string id) => $"customer {id}";
    }

    private sealed class DataClassProvider(string dataClass) : IGovernanceContextProvider
    {
        public ValueTask AddContextAsync(Microsoft.SemanticKernel.FunctionInvocationContext invocation, IDictionary<string, object?> context, CancellationToken cancellationToken)
        {
            context["data_class"] = dataClass;
            return ValueTask.CompletedTask;
        }
    }

    /// <summary>A model of the test's own: each turn answers from the tools it was offered, asking for tool calls or answering.</summary>
    private sealed class ScriptedModel(params Func<IList<AITool>, ChatResponse>[] turns) : IChatClient
    {
        public int Calls { get; private set; }

        public List<string> ToolResults { get; } = [];

        public static ChatResponse Call(IList<AITool> tools, string function, Dictionary<string, object?> arguments)
        {
            var tool = tools.Single(each => each.Name.EndsWith(function, StringComparison.Ordinal));
            return new ChatResponse(new ChatMessage(ChatRole.Assistant, [new Microsoft.Extensions.AI.FunctionCallContent($"call-{Guid.NewGuid():N}", tool.Name, arguments)]));
        }

        public Task<ChatResponse> GetResponseAsync(IEnumerable<ChatMessage> messages, ChatOptions? options = null, CancellationToken cancellationToken = default)
        {
            ToolResults.AddRange(messages.SelectMany(message => message.Contents).OfType<Microsoft.Extensions.AI.FunctionResultContent>().Select(result => result.Result?.ToString() ?? ""));
            var turn = turns[Calls++];
            return Task.FromResult(turn(options?.Tools ?? []));
        }

        public IAsyncEnumerable<ChatResponseUpdate> GetStreamingResponseAsync(IEnumerable<ChatMessage> messages, ChatOptions? options = null, CancellationToken cancellationToken = default) =>
            throw new NotSupportedException("the tests do not stream");

        public object? GetService(Type serviceType, object? serviceKey = null) => null;

        public void Dispose()
        {
        }
    }
}
