using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// Sessions (docs/policies.md "Sessions"): the three-step attack of the docs, through the SDK. A
/// customer record read, then an untrusted web page fetched, then a mail sent: each allowed
/// alone, the mail denied in the session that did both, and allowed in a session that did not.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class SessionTests(GatewayFixture fixture) : IAsyncLifetime
{
    private const string PolicyName = "sdk-dotnet-exfiltration";
    private readonly Clients clients = new();
    private string agentId = "";

    public async Task InitializeAsync()
    {
        agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-sessions", "verified");
        // Scoped to this test's agent; session labels only, so no other session or agent carries them.
        await fixture.Gateway.PutPolicyAsync(PolicyName, $"""
            name: {PolicyName}
            match: {"{"} plugin: "Session*" {"}"}
            rules:
              - name: reads-customers
                condition: agent.id == "{agentId}" and action == "SessionCrm.GetCustomer"
                action: label
                labels: [private_data]
                reason: Customer records were read
              - name: fetches-web
                condition: agent.id == "{agentId}" and action == "SessionWeb.Fetch"
                action: label
                labels: [untrusted_content]
                reason: An untrusted web page was fetched
              - name: no-way-out
                condition: >
                  agent.id == "{agentId}" and action == "SessionMail.Send"
                  and session.labels.has("private_data") and session.labels.has("untrusted_content")
                action: deny
                reason: Private data and untrusted content in one session; nothing leaves by mail
            """);
    }

    public async Task DisposeAsync()
    {
        await fixture.Gateway.DeletePolicyAsync(PolicyName);
        await clients.DisposeAsync();
    }

    [Fact]
    public async Task The_third_step_is_denied_in_the_session_that_took_the_first_two_and_allowed_in_another()
    {
        var client = clients.Create(clients.OptionsFor(fixture, agentId).Also(options => options.SessionId = "conversation-1"));
        var mail = new Dictionary<string, object?> { ["to"] = "someone@example.com" };

        Assert.True((await client.CheckAsync("SessionCrm", "GetCustomer", new Dictionary<string, object?> { ["id"] = "cus_42" })).IsAllowed);
        Assert.True((await client.CheckAsync("SessionWeb", "Fetch", new Dictionary<string, object?> { ["url"] = "https://example.com/page" })).IsAllowed);
        var denied = await Assert.ThrowsAsync<PolicyDeniedException>(() => client.CheckAsync("SessionMail", "Send", mail));

        Assert.Equal((PolicyName, "no-way-out"), (denied.Policy, denied.Rule));
        // Another session of the same agent, named for one flow over the client's own: it read and fetched nothing.
        using (GovernanceSession.Use("conversation-2"))
        {
            Assert.True((await client.CheckAsync("SessionMail", "Send", mail)).IsAllowed);
        }
        // The first session still remembers.
        await Assert.ThrowsAsync<PolicyDeniedException>(() => client.CheckAsync("SessionMail", "Send", mail));
    }

    [Fact]
    public async Task A_session_named_for_a_flow_goes_over_HTTP_too()
    {
        var options = clients.OptionsFor(fixture, agentId);
        options.GrpcAddress = $"127.0.0.1:{GatewayProcess.FreePort()}";   // nothing listens: checks go over HTTP
        var client = clients.Create(options);
        var mail = new Dictionary<string, object?> { ["to"] = "someone@example.com" };

        using (GovernanceSession.Use("http-conversation"))
        {
            Assert.Equal(DecisionSource.Http, (await client.CheckAsync("SessionCrm", "GetCustomer", new Dictionary<string, object?> { ["id"] = "cus_7" })).Source);
            await client.CheckAsync("SessionWeb", "Fetch", new Dictionary<string, object?> { ["url"] = "https://example.com/page" });
            await Assert.ThrowsAsync<PolicyDeniedException>(() => client.CheckAsync("SessionMail", "Send", mail));
        }
        // Without a session, the agent's own scope: it did neither.
        Assert.True((await client.CheckAsync("SessionMail", "Send", mail)).IsAllowed);
    }

    [Fact]
    public void A_session_id_the_gateway_would_refuse_is_refused_at_once()
    {
        Assert.Throws<ArgumentException>(() => GovernanceSession.Use("two words"));
        Assert.Throws<ArgumentException>(() => GovernanceSession.Use(new string('s', 129)));
        Assert.Null(GovernanceSession.Current);
    }
}
