using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using AgentGovernance.AspNetCore;
using AgentGovernance.Tests.Support;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace AgentGovernance.Tests;

/// <summary>
/// The ASP.NET Core middleware as an upstream runs it: on Kestrel, behind the built gateway's
/// proxy, which signs the decision tokens it checks (docs/security.md "Decision tokens").
/// </summary>
public sealed class DecisionTokenTests(DecisionTokenTests.UpstreamBehindGateway stack) : IClassFixture<DecisionTokenTests.UpstreamBehindGateway>
{
    private static HttpRequestMessage Request(HttpMethod method, string url, string? token = null, string? body = null, string? decisionToken = null)
    {
        var request = new HttpRequestMessage(method, url);
        if (token is not null) request.Headers.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", token);
        if (decisionToken is not null) request.Headers.Add(DecisionTokenMiddleware.HeaderName, decisionToken);
        if (body is not null) request.Content = new StringContent(body, Encoding.UTF8, "application/json");
        return request;
    }

    private async Task<(HttpStatusCode Status, JsonElement Body)> SendAsync(HttpRequestMessage request)
    {
        using (request)
        {
            using var response = await stack.Http.SendAsync(request);
            return (response.StatusCode, await response.Content.ReadFromJsonAsync<JsonElement>());
        }
    }

    [Fact]
    public async Task The_governed_call_is_let_through_with_its_decision_and_a_call_around_the_gateway_is_refused()
    {
        var (status, body) = await SendAsync(Request(HttpMethod.Post, $"{stack.Gateway.Url}proxy/orders?id=7", stack.AgentToken, """{"item":"paper"}"""));

        Assert.Equal(HttpStatusCode.OK, status);
        Assert.Equal("write:orders", body.GetProperty("action").GetString());
        Assert.StartsWith("aud_", body.GetProperty("decisionId").GetString(), StringComparison.Ordinal);
        Assert.Equal(stack.AgentId, body.GetProperty("agentId").GetString());
        Assert.Equal("""{"item":"paper"}""", body.GetProperty("body").GetString());
        var (direct, refusal) = await SendAsync(Request(HttpMethod.Post, $"{stack.UpstreamUrl}orders?id=7", body: """{"item":"paper"}"""));
        Assert.Equal((HttpStatusCode.Unauthorized, "decision_token_invalid", "missing"), (direct, refusal.GetProperty("error").GetString(), refusal.GetProperty("problem").GetString()));
    }

    [Fact]
    public async Task A_token_replayed_for_another_request_or_altered_is_refused()
    {
        Assert.Equal(HttpStatusCode.OK, (await SendAsync(Request(HttpMethod.Get, $"{stack.Gateway.Url}proxy/orders/1", stack.AgentToken))).Status);
        var forwarded = stack.LastToken();

        foreach (var (method, path) in new[] { (HttpMethod.Get, "orders/2"), (HttpMethod.Get, "orders/1?all=1"), (HttpMethod.Delete, "orders/1") })
        {
            var (status, body) = await SendAsync(Request(method, stack.UpstreamUrl + path, decisionToken: forwarded));
            Assert.Equal((HttpStatusCode.Unauthorized, "wrong_request"), (status, body.GetProperty("problem").GetString()));
        }
        Assert.Equal(HttpStatusCode.OK, (await SendAsync(Request(HttpMethod.Get, stack.UpstreamUrl + "orders/1", decisionToken: forwarded))).Status);
        var parts = forwarded.Split('~');
        var otherClaims = System.Buffers.Text.Base64Url.DecodeFromChars(parts[1]);
        var altered = Encoding.UTF8.GetString(otherClaims).Replace("read:orders/1", "read:orders/2", StringComparison.Ordinal);
        var forged = $"{parts[0]}~{System.Buffers.Text.Base64Url.EncodeToString(Encoding.UTF8.GetBytes(altered))}~{parts[2]}";
        var (forgedStatus, forgedBody) = await SendAsync(Request(HttpMethod.Get, stack.UpstreamUrl + "orders/1", decisionToken: forged));
        Assert.Equal((HttpStatusCode.Unauthorized, "bad_signature"), (forgedStatus, forgedBody.GetProperty("problem").GetString()));
    }

    [Fact]
    public async Task An_expired_token_is_refused()
    {
        // That branch's verifier runs two minutes ahead: every token it sees has expired.
        var (status, body) = await SendAsync(Request(HttpMethod.Get, $"{stack.Gateway.Url}proxy/later/orders", stack.AgentToken));

        Assert.Equal((HttpStatusCode.Unauthorized, "expired"), (status, body.GetProperty("problem").GetString()));
    }

    /// <summary>A gateway whose proxy forwards to an ASP.NET Core upstream that verifies its tokens.</summary>
    public sealed class UpstreamBehindGateway : IAsyncLifetime
    {
        private const string Issuer = "http://gateway.dotnet.test";
        private readonly int upstreamPort = GatewayProcess.FreePort();
        private readonly List<string> tokens = [];
        private WebApplication? upstream;
        private GatewayProcess? gateway;

        public HttpClient Http { get; } = new() { Timeout = TimeSpan.FromSeconds(30) };

        public GatewayProcess Gateway => gateway!;

        public string UpstreamUrl => $"http://127.0.0.1:{upstreamPort}/";

        public string AgentId { get; private set; } = "";

        public string AgentToken { get; private set; } = "";

        public string LastToken()
        {
            lock (tokens) return tokens[^1];
        }

        public async Task InitializeAsync()
        {
            gateway = await GatewayProcess.StartAsync(environment: new Dictionary<string, string> { ["UPSTREAM_URL"] = $"http://127.0.0.1:{upstreamPort}", ["PUBLIC_URL"] = Issuer });
            var jwks = new Uri(gateway.Url, ".well-known/jwks.json");
            var builder = WebApplication.CreateSlimBuilder();
            builder.WebHost.UseUrls(UpstreamUrl);
            builder.Services.AddDecisionTokenVerifier(options =>
            {
                options.JwksUrl = jwks;
                options.Issuer = Issuer;
            });
            upstream = builder.Build();
            var laterOptions = new DecisionTokenVerifierOptions { JwksUrl = jwks, TimeProvider = new Later(TimeSpan.FromMinutes(2)) };
            var later = new DecisionTokenVerifier(laterOptions);
            upstream.UseWhen(context => context.Request.Path.StartsWithSegments("/later"), branch => branch.UseMiddleware<DecisionTokenMiddleware>(later, laterOptions));
            upstream.UseWhen(context => !context.Request.Path.StartsWithSegments("/later"), branch => branch.UseDecisionTokens());
            upstream.Map("/{**path}", async context =>
            {
                lock (tokens) tokens.Add(context.Request.Headers[DecisionTokenMiddleware.HeaderName].ToString());
                var decision = context.GetVerifiedDecision()!;
                using var reader = new StreamReader(context.Request.Body);
                var body = await reader.ReadToEndAsync();
                await context.Response.WriteAsJsonAsync(new { action = decision.Action, decisionId = decision.DecisionId, agentId = decision.AgentId, body });
            });
            await upstream.StartAsync();
            (AgentId, AgentToken) = await gateway.CreateAgentWithTokenAsync("sdk-dotnet-upstream");
        }

        public async Task DisposeAsync()
        {
            Http.Dispose();
            if (upstream is not null) await upstream.DisposeAsync();
            if (gateway is not null) await gateway.DisposeAsync();
        }

        private sealed class Later(TimeSpan ahead) : TimeProvider
        {
            public override DateTimeOffset GetUtcNow() => System.GetUtcNow() + ahead;
        }
    }
}
