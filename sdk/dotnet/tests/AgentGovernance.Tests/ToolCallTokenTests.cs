using System.Text.Json;
using System.Text.Json.Nodes;
using AgentGovernance.AspNetCore;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// MCP tool calls' decision tokens (<c>params._meta["io.agentgov/decision-token"]</c>): the
/// verifier checked against the cases of sdk/fixtures/decision-token-tool-calls.json, which the
/// gateway's own code signed (scripts/sdk-tool-call-vectors.mjs), so this SDK's canonical JSON is
/// the gateway's.
/// </summary>
public sealed class ToolCallTokenTests
{
    private static readonly JsonElement Vectors = JsonDocument.Parse(File.ReadAllText(Path.Combine(RepositoryRoot.Find(), "sdk", "fixtures", "decision-token-tool-calls.json"))).RootElement;

    private static IEnumerable<JsonElement> Cases => Vectors.GetProperty("cases").EnumerateArray();

    public static TheoryData<string> CaseNames => [.. Cases.Select(testCase => testCase.GetProperty("about").GetString()!)];

    private static JsonElement Case(string about) => Cases.Single(testCase => testCase.GetProperty("about").GetString() == about);

    private static DecisionTokenVerifier Verifier(TimeSpan ahead = default) => new(new DecisionTokenVerifierOptions
    {
        Jwks = Vectors.GetProperty("jwks").GetRawText(),
        Issuer = Vectors.GetProperty("issuer").GetString(),
        TimeProvider = new FixedClock(DateTimeOffset.FromUnixTimeMilliseconds((long)(Vectors.GetProperty("now").GetDouble() * 1000)) + ahead),
    });

    /// <summary>The case's params as received, with <paramref name="token"/> in <c>_meta</c>; <paramref name="change"/> edits them first.</summary>
    private static JsonElement WithToken(string paramsText, string token, Action<JsonObject>? change = null)
    {
        var parameters = JsonNode.Parse(paramsText)!.AsObject();
        parameters["_meta"] = new JsonObject { ["progressToken"] = 3, [DecisionTokenVerifier.ToolCallMetaKey] = token };
        change?.Invoke(parameters);
        // Back to text and parsed again: the verifier reads params as an MCP server receives them.
        return JsonDocument.Parse(parameters.ToJsonString()).RootElement;
    }

    private static JsonElement WithToken(JsonElement testCase, Action<JsonObject>? change = null) =>
        WithToken(testCase.GetProperty("params").GetString()!, testCase.GetProperty("token").GetString()!, change);

    private static async Task<DecisionTokenProblem> RefusalAsync(JsonElement parameters, TimeSpan ahead = default)
    {
        using var verifier = Verifier(ahead);
        return (await Assert.ThrowsAsync<DecisionTokenException>(async () => await verifier.VerifyToolCallAsync(parameters))).Problem;
    }

    [Theory]
    [MemberData(nameof(CaseNames))]
    public void The_canonical_arguments_are_the_gateways(string about)
    {
        var testCase = Case(about);
        var parameters = JsonDocument.Parse(testCase.GetProperty("params").GetString()!).RootElement;
        var canonical = parameters.TryGetProperty("arguments", out var arguments) ? CanonicalJson.Serialize(arguments) : "{}";

        Assert.Equal(testCase.GetProperty("canonicalArguments").GetString(), canonical);
        Assert.Equal(testCase.GetProperty("req").GetString(), DecisionTokenVerifier.ToolCallHash(parameters.GetProperty("name").GetString()!, canonical));
    }

    [Theory]
    [MemberData(nameof(CaseNames))]
    public async Task The_token_the_gateway_signed_for_the_call_is_accepted(string about)
    {
        var testCase = Case(about);
        using var verifier = Verifier();

        var decision = await verifier.VerifyToolCallAsync(WithToken(testCase));

        Assert.Equal(testCase.GetProperty("decisionId").GetString(), decision.DecisionId);
        Assert.Equal(("agt_vectors", "org_vectors", testCase.GetProperty("action").GetString()), (decision.AgentId, decision.OrgId, decision.Action));
        Assert.Equal(Vectors.GetProperty("now").GetDouble() + 60, decision.ExpiresAt.ToUnixTimeSeconds());
    }

    [Theory]
    [MemberData(nameof(CaseNames))]
    public async Task The_token_is_accepted_with_the_arguments_an_MCP_SDK_hands_a_tool(string about)
    {
        var testCase = Case(about);
        var parameters = JsonDocument.Parse(testCase.GetProperty("params").GetString()!).RootElement;
        var arguments = parameters.TryGetProperty("arguments", out var given) ? given.EnumerateObject().ToDictionary(property => property.Name, property => property.Value) : null;
        using var verifier = Verifier();

        var decision = await verifier.VerifyToolCallAsync(testCase.GetProperty("token").GetString(), parameters.GetProperty("name").GetString()!, arguments);

        Assert.Equal(testCase.GetProperty("decisionId").GetString(), decision.DecisionId);
    }

    [Fact]
    public async Task A_token_for_another_tool_call_is_refused()
    {
        foreach (var testCase in Cases)
        {
            foreach (var other in Cases.Where(other => other.GetProperty("req").GetString() != testCase.GetProperty("req").GetString()))
            {
                Assert.Equal(DecisionTokenProblem.WrongRequest, await RefusalAsync(WithToken(other.GetProperty("params").GetString()!, testCase.GetProperty("token").GetString()!)));
            }
        }
    }

    [Fact]
    public async Task The_call_with_its_tool_or_an_argument_changed_is_refused()
    {
        var numbers = Case("numbers as ECMAScript writes them");

        Assert.Equal(DecisionTokenProblem.WrongRequest, await RefusalAsync(WithToken(numbers, parameters => parameters["name"] = "measure2")));
        Assert.Equal(DecisionTokenProblem.WrongRequest, await RefusalAsync(WithToken(numbers, parameters => parameters["arguments"]!["negative_zero"] = 1)));
        Assert.Equal(DecisionTokenProblem.WrongRequest, await RefusalAsync(WithToken(numbers, parameters => parameters["arguments"]!["extra"] = null)));
    }

    [Fact]
    public async Task A_call_without_a_token_or_with_an_expired_one_is_refused()
    {
        var testCase = Cases.First();
        var paramsText = testCase.GetProperty("params").GetString()!;
        using var verifier = Verifier();

        Assert.Equal(DecisionTokenProblem.Missing, await RefusalAsync(JsonDocument.Parse(paramsText).RootElement));
        Assert.Equal(DecisionTokenProblem.Missing, await RefusalAsync(WithToken(testCase, parameters => parameters["_meta"] = new JsonObject { ["progressToken"] = 1 })));
        Assert.Equal(DecisionTokenProblem.Missing, (await Assert.ThrowsAsync<DecisionTokenException>(async () => await verifier.VerifyToolCallAsync(null, "list_orders", null))).Problem);
        Assert.Equal(DecisionTokenProblem.Expired, await RefusalAsync(WithToken(testCase), TimeSpan.FromMinutes(2)));
    }

    [Fact]
    public async Task Arguments_no_double_holds_and_params_of_another_shape_are_refused_as_malformed()
    {
        var testCase = Cases.First();
        var token = testCase.GetProperty("token").GetString()!;

        foreach (var arguments in new[] { """{"x":1e400}""", """{"x":[-1e999]}""", "[1,2]", "\"text\"" })
        {
            var meta = new JsonObject { [DecisionTokenVerifier.ToolCallMetaKey] = token }.ToJsonString();
            var parameters = JsonDocument.Parse($$"""{"name":"list_orders","arguments":{{arguments}},"_meta":{{meta}}}""").RootElement;
            Assert.Equal(DecisionTokenProblem.Malformed, await RefusalAsync(parameters));
        }
        Assert.Equal(DecisionTokenProblem.Malformed, await RefusalAsync(WithToken(testCase, parameters => parameters["name"] = 7)));
        Assert.Equal(DecisionTokenProblem.Malformed, await RefusalAsync(JsonDocument.Parse("[]").RootElement));
    }

    [Fact]
    public void Numbers_are_written_as_ECMAScript_writes_them()
    {
        foreach (var pair in Vectors.GetProperty("numbers").EnumerateArray())
        {
            var text = pair[0].GetString()!;
            Assert.True(pair[1].GetString() == CanonicalJson.Serialize(JsonDocument.Parse(text).RootElement), $"{text}: expected {pair[1].GetString()}, got {CanonicalJson.Serialize(JsonDocument.Parse(text).RootElement)}");
        }
    }

    private sealed class FixedClock(DateTimeOffset now) : TimeProvider
    {
        public override DateTimeOffset GetUtcNow() => now;
    }
}
