using System.Buffers.Text;
using System.Net;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using AgentGovernance.AspNetCore;
using AgentGovernance.Tests.Support;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;

namespace AgentGovernance.Tests;

/// <summary>
/// The verifier across a rotation of the gateway's P-256 (ES256) signing key: the built gateway
/// is started with one key, then again on the same data with another (as an operator rotates
/// SIGNING_KEY_FILE), and the decision tokens its proxy forwarded are verified from its JWKS, fetched
/// through a handler that counts the fetches, on a clock the test moves.
/// </summary>
public sealed class DecisionTokenKeyRotationTests : IAsyncLifetime
{
    private const string Issuer = "http://gateway.rotation.test";
    private readonly string keyFile = Path.Combine(Directory.CreateTempSubdirectory("agentgov-sdk-dotnet-key-").FullName, "signing-key.pem");
    private readonly int upstreamPort = GatewayProcess.FreePort();
    private readonly List<(string Token, string Method, string Target, byte[] Body)> forwarded = [];
    private readonly HttpClient http = new() { Timeout = TimeSpan.FromSeconds(30) };
    private WebApplication? upstream;
    private GatewayProcess gateway = null!;
    private string agentToken = "";

    public async Task InitializeAsync()
    {
        await WriteP256KeyAsync();
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls($"http://127.0.0.1:{upstreamPort}/");
        upstream = builder.Build();
        upstream.Map("/{**path}", async context =>
        {
            using var body = new MemoryStream();
            await context.Request.Body.CopyToAsync(body);
            var target = context.Features.Get<IHttpRequestFeature>()!.RawTarget;
            lock (forwarded) forwarded.Add((context.Request.Headers[DecisionTokenMiddleware.HeaderName].ToString(), context.Request.Method, target, body.ToArray()));
            await context.Response.WriteAsync("ok");
        });
        await upstream.StartAsync();
        gateway = await GatewayProcess.StartAsync(environment: new Dictionary<string, string>
        {
            ["UPSTREAM_URL"] = $"http://127.0.0.1:{upstreamPort}",
            ["PUBLIC_URL"] = Issuer,
            ["SIGNING_KEY_FILE"] = keyFile,
        });
        (_, agentToken) = await gateway.CreateAgentWithTokenAsync("sdk-dotnet-rotation");
    }

    public async Task DisposeAsync()
    {
        http.Dispose();
        if (upstream is not null) await upstream.DisposeAsync();
        await gateway.DisposeAsync();
        Directory.Delete(Path.GetDirectoryName(keyFile)!, recursive: true);
    }

    [Fact]
    public async Task A_token_of_a_new_key_is_verified_after_one_refresh_and_made_up_keys_cannot_make_it_fetch_more()
    {
        var clock = new MovableClock();
        using var fetches = new CountingHandler();
        using var verifier = new DecisionTokenVerifier(new DecisionTokenVerifierOptions
        {
            JwksUrl = new Uri(gateway.Url, ".well-known/jwks.json"),
            Issuer = Issuer,
            HttpHandler = fetches,
            TimeProvider = clock,
        });

        var first = await ForwardedAsync("orders/1");
        Assert.Equal("ES256", HeaderOf(first.Token).GetProperty("alg").GetString());
        Assert.Equal("read:orders/1", (await VerifyAsync(verifier, first)).Action);
        Assert.Equal(1, fetches.Count);

        // The operator rotates the key: the gateway signs with the new one from its next start on.
        var oldKid = HeaderOf(first.Token).GetProperty("kid").GetString();
        await gateway.StopAsync();
        await WriteP256KeyAsync();
        await gateway.StartAgainAsync();
        var second = await ForwardedAsync("orders/2");
        var newKid = HeaderOf(second.Token).GetProperty("kid").GetString();
        Assert.NotEqual(oldKid, newKid);
        Assert.Equal("ES256", HeaderOf(second.Token).GetProperty("alg").GetString());

        // Within RefreshInterval of the last fetch the new key is not asked for: refused, no fetch.
        Assert.Equal(DecisionTokenProblem.UnknownKey, (await Assert.ThrowsAsync<DecisionTokenException>(() => VerifyAsync(verifier, second).AsTask())).Problem);
        Assert.Equal(1, fetches.Count);

        // Past it, the unknown key makes one fetch, which brings it: verified. The old key is still published.
        clock.Advance(TimeSpan.FromSeconds(31));
        Assert.Equal("read:orders/2", (await VerifyAsync(verifier, second)).Action);
        Assert.Equal(2, fetches.Count);
        Assert.Equal("read:orders/1", (await VerifyAsync(verifier, first)).Action);
        Assert.Equal(2, fetches.Count);

        // A key the gateway never had: refused after the one fetch it may make, and twenty more
        // made-up keys at once within the interval fetch nothing.
        clock.Advance(TimeSpan.FromSeconds(31));
        var madeUp = second with { Token = WithKid(second.Token, "made-up-0") };
        Assert.Equal(DecisionTokenProblem.UnknownKey, (await Assert.ThrowsAsync<DecisionTokenException>(() => VerifyAsync(verifier, madeUp).AsTask())).Problem);
        Assert.Equal(3, fetches.Count);
        var refusals = await Task.WhenAll(Enumerable.Range(1, 20).Select(async index =>
        {
            try
            {
                await VerifyAsync(verifier, second with { Token = WithKid(second.Token, $"made-up-{index}") });
                return (DecisionTokenProblem?)null;
            }
            catch (DecisionTokenException refused)
            {
                return refused.Problem;
            }
        }));
        Assert.All(refusals, problem => Assert.Equal(DecisionTokenProblem.UnknownKey, problem));
        Assert.Equal(3, fetches.Count);
        Assert.Equal("read:orders/2", (await VerifyAsync(verifier, second)).Action);
    }

    private static ValueTask<VerifiedDecision> VerifyAsync(DecisionTokenVerifier verifier, (string Token, string Method, string Target, byte[] Body) request) =>
        verifier.VerifyAsync(request.Token, request.Method, request.Target, request.Body);

    private async Task<(string Token, string Method, string Target, byte[] Body)> ForwardedAsync(string path)
    {
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(gateway.Url, $"proxy/{path}"));
        request.Headers.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", agentToken);
        using var response = await http.SendAsync(request);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        lock (forwarded) return forwarded[^1];
    }

    private async Task WriteP256KeyAsync()
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        await File.WriteAllTextAsync(keyFile, key.ExportPkcs8PrivateKeyPem());
    }

    private static JsonElement HeaderOf(string token) =>
        JsonDocument.Parse(Base64Url.DecodeFromChars(token.Split('~')[0].Split('.')[0])).RootElement.Clone();

    /// <summary>The token with its JWS header naming another key (its signature then fits none).</summary>
    private static string WithKid(string token, string kid)
    {
        var parts = token.Split('~');
        var segments = parts[0].Split('.');
        var header = System.Text.Json.Nodes.JsonNode.Parse(Base64Url.DecodeFromChars(segments[0]))!;
        header["kid"] = kid;
        segments[0] = Base64Url.EncodeToString(Encoding.UTF8.GetBytes(header.ToJsonString()));
        parts[0] = string.Join('.', segments);
        return string.Join('~', parts);
    }

    /// <summary>A clock that stands still at the time it was made (a gateway restart takes long on a loaded machine) until the test moves it.</summary>
    private sealed class MovableClock : TimeProvider
    {
        private readonly DateTimeOffset startedAt = System.GetUtcNow();
        private readonly long startedTimestamp = System.GetTimestamp();
        private long aheadTicks;

        public void Advance(TimeSpan by) => Interlocked.Add(ref aheadTicks, by.Ticks);

        public override DateTimeOffset GetUtcNow() => startedAt + TimeSpan.FromTicks(Interlocked.Read(ref aheadTicks));

        public override long GetTimestamp() => startedTimestamp + (long)(Interlocked.Read(ref aheadTicks) * (System.TimestampFrequency / (double)TimeSpan.TicksPerSecond));

        public override long TimestampFrequency => System.TimestampFrequency;
    }

    /// <summary>Sends to the network, counting the requests (the JWKS fetches).</summary>
    private sealed class CountingHandler() : DelegatingHandler(new SocketsHttpHandler())
    {
        private int count;

        public int Count => Volatile.Read(ref count);

        protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref count);
            return base.SendAsync(request, cancellationToken);
        }
    }
}
