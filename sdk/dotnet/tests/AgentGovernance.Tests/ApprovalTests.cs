using System.ComponentModel;
using System.Diagnostics;
using System.Text.Json;
using AgentGovernance.SemanticKernel;
using AgentGovernance.Tests.Support;
using Microsoft.SemanticKernel;

namespace AgentGovernance.Tests;

/// <summary>
/// GuardAsync and a <c>require_approval</c> rule against a real gateway (docs/approvals.md): it waits
/// while an admin decides, runs the call once when approved, and denies when rejected or when its
/// bounded wait ends; CheckAsync hands the pending approval to callers who wait themselves.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class ApprovalTests(GatewayFixture fixture) : IAsyncLifetime
{
    private readonly Clients clients = new();
    private string agentId = "";

    public async Task InitializeAsync()
    {
        await fixture.Gateway.PutPolicyAsync("sdk-dotnet-approvals", """
            name: sdk-dotnet-approvals
            match: { plugin: PaymentsPlugin, function: Refund }
            rules:
              - condition: args.amount > 100
                action: require_approval
                reason: Refunds over 100 need a person
            """);
        agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-approvals", "verified");
    }

    public async Task DisposeAsync() => await clients.DisposeAsync();

    private GovernanceClient Client(Action<AgentGovernanceOptions>? configure = null)
    {
        var options = clients.OptionsFor(fixture, agentId);
        configure?.Invoke(options);
        return clients.Create(options);
    }

    private static Dictionary<string, object?> Amount(int amount) => new() { ["amount"] = amount };

    /// <summary>The agent's pending approval, once its guarded call has opened it.</summary>
    private async Task<JsonElement> PendingApprovalAsync()
    {
        var waited = Stopwatch.StartNew();
        for (;;)
        {
            var found = (await fixture.Gateway.ApprovalsAsync("pending")).Where(approval => approval.GetProperty("agentId").GetString() == agentId).ToList();
            if (found.Count > 0) return found[0];
            if (waited.Elapsed > TimeSpan.FromSeconds(10)) throw new InvalidOperationException($"no pending approval for {agentId}");
            await Task.Delay(50);
        }
    }

    private async Task<string?> StatusOfAsync(string approvalId) =>
        (await fixture.Gateway.ApprovalsAsync()).Where(approval => approval.GetProperty("id").GetString() == approvalId).Select(approval => approval.GetProperty("status").GetString()).FirstOrDefault();

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task GuardAsync_waits_while_an_admin_approves_then_runs_the_call_once(bool overHttp)
    {
        var client = Client(options =>
        {
            if (overHttp) options.GrpcAddress = $"127.0.0.1:{GatewayProcess.FreePort()}";
        });
        var runs = 0;
        var guarded = client.GuardAsync("PaymentsPlugin", "Refund", Amount(500), _ =>
        {
            Interlocked.Increment(ref runs);
            return Task.FromResult("refunded");
        });

        var approval = await PendingApprovalAsync();
        var approvalId = approval.GetProperty("id").GetString()!;
        Assert.Equal("PaymentsPlugin.Refund", approval.GetProperty("action").GetString());
        await Task.Delay(300);
        Assert.Equal(0, runs);
        await fixture.Gateway.DecideApprovalAsync(approvalId, "approve", "ok");

        var result = await guarded.WaitAsync(TimeSpan.FromSeconds(15));
        Assert.False(result.IsDenied);
        Assert.Equal("refunded", result.Value);
        Assert.Equal(1, runs);
        Assert.Equal("used", await StatusOfAsync(approvalId));
    }

    [Fact]
    public async Task GuardAsync_denies_when_an_admin_rejects_softly_when_ThrowOnDenied_is_false()
    {
        var runs = 0;
        Task<string> Run(CancellationToken _)
        {
            Interlocked.Increment(ref runs);
            return Task.FromResult("ran");
        }

        var strict = Client().GuardAsync("PaymentsPlugin", "Refund", Amount(300), Run);
        var first = (await PendingApprovalAsync()).GetProperty("id").GetString()!;
        await fixture.Gateway.DecideApprovalAsync(first, "reject", "no");
        var denied = await Assert.ThrowsAsync<PolicyDeniedException>(() => strict.WaitAsync(TimeSpan.FromSeconds(15)));
        Assert.IsNotType<ApprovalPendingException>(denied);
        Assert.Equal($"Approval {first} is rejected: Refunds over 100 need a person", denied.Reason);
        Assert.Equal(("deny", "sdk-dotnet-approvals"), (denied.Decision.Decision, denied.Policy));

        var soft = Client(options => options.ThrowOnDenied = false).GuardAsync("PaymentsPlugin", "Refund", Amount(301), Run);
        var second = (await PendingApprovalAsync()).GetProperty("id").GetString()!;
        await fixture.Gateway.DecideApprovalAsync(second, "reject");
        var result = await soft.WaitAsync(TimeSpan.FromSeconds(15));
        Assert.True(result.IsDenied);
        Assert.StartsWith($"Approval {second} is rejected", result.Decision.Reason, StringComparison.Ordinal);
        Assert.Equal(0, runs);
    }

    [Fact]
    public async Task GuardAsync_gives_up_when_nobody_decides_within_ApprovalWait()
    {
        var client = Client(options => options.ApprovalWait = TimeSpan.FromSeconds(1));
        var runs = 0;
        var waited = Stopwatch.StartNew();
        var denied = await Assert.ThrowsAsync<PolicyDeniedException>(() => client.GuardAsync("PaymentsPlugin", "Refund", Amount(200), _ => Task.FromResult(++runs)));
        waited.Stop();

        Assert.Matches("^Approval appr_\\S+ was not decided within the 1 s GuardAsync waits", denied.Reason);
        Assert.InRange(waited.Elapsed, TimeSpan.FromSeconds(0.9), TimeSpan.FromSeconds(5));
        Assert.Equal(0, runs);
        // The approval stays pending: a person may still approve it for a later retry.
        Assert.Equal("pending", (await PendingApprovalAsync()).GetProperty("status").GetString());
    }

    [Fact]
    public async Task CheckAsync_throws_the_pending_approval_which_a_retry_with_it_uses_once()
    {
        var client = Client();
        var pending = await Assert.ThrowsAsync<ApprovalPendingException>(() => client.CheckAsync("PaymentsPlugin", "Refund", Amount(900)));
        Assert.StartsWith("appr_", pending.ApprovalId, StringComparison.Ordinal);
        Assert.True(pending.ExpiresAt > DateTimeOffset.UtcNow);
        Assert.Equal(ApprovalStatus.Pending, await client.WaitForApprovalAsync(pending.ApprovalId, TimeSpan.Zero));

        await fixture.Gateway.DecideApprovalAsync(pending.ApprovalId, "approve");
        Assert.Equal(ApprovalStatus.Approved, await client.WaitForApprovalAsync(pending.ApprovalId));
        // Asking where it stands spent nothing: the retry is what uses it, once.
        Assert.True((await client.CheckAsync("PaymentsPlugin", "Refund", Amount(900), null, pending.ApprovalId)).IsAllowed);
        var again = await Assert.ThrowsAsync<PolicyDeniedException>(() => client.CheckAsync("PaymentsPlugin", "Refund", Amount(900), null, pending.ApprovalId));
        Assert.Equal($"Approval {pending.ApprovalId} was already used: an approval lets one request through", again.Reason);
        Assert.Equal(ApprovalStatus.Used, await client.WaitForApprovalAsync(pending.ApprovalId));

        var soft = await Client(options => options.ThrowOnDenied = false).CheckAsync("PaymentsPlugin", "Refund", Amount(901));
        Assert.True(soft.IsPending);
        Assert.False(soft.IsAllowed);
        Assert.Equal("pending", soft.Decision);
        Assert.StartsWith("appr_", soft.ApprovalId, StringComparison.Ordinal);
        Assert.NotNull(soft.ApprovalExpiresAt);
    }

    [Fact]
    public async Task The_Semantic_Kernel_filter_waits_for_the_approval_then_runs_the_function_once()
    {
        var payments = new PaymentsPlugin();
        var kernel = Kernel.CreateBuilder().Build();
        kernel.Plugins.AddFromObject(payments, "PaymentsPlugin");
        kernel.AddAgentGovernance(Client());

        var invoked = kernel.InvokeAsync("PaymentsPlugin", "Refund", new KernelArguments { ["amount"] = 450 });
        var approvalId = (await PendingApprovalAsync()).GetProperty("id").GetString()!;
        Assert.Equal(0, payments.Runs);
        await fixture.Gateway.DecideApprovalAsync(approvalId, "approve");

        var result = await invoked.WaitAsync(TimeSpan.FromSeconds(15));
        Assert.Equal("refunded 450", result.GetValue<string>());
        Assert.Equal(1, payments.Runs);
    }

    /// <summary>A plugin whose refunds over 100 need a person (the policy above).</summary>
    private sealed class PaymentsPlugin
    {
        private int runs;

        public int Runs => Volatile.Read(ref runs);

        [KernelFunction("Refund"), Description("Refunds an amount")]
        public string Refund(int amount)
        {
            Interlocked.Increment(ref runs);
            return $"refunded {amount}";
        }
    }
}
