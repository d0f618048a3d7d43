using System.Text.Json;
using System.Text.Json.Nodes;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// The default result summary: the rule and cases every SDK shares
/// (sdk/fixtures/result-summaries.json), as .NET values and as JSON, then the .NET values JSON
/// has no word for.
/// </summary>
public sealed class ResultSummaryTests
{
    public static TheoryData<string, string, string> SharedCases()
    {
        var fixture = JsonNode.Parse(File.ReadAllText(Path.Combine(RepositoryRoot.Find(), "sdk", "fixtures", "result-summaries.json")))!;
        var cases = new TheoryData<string, string, string>();
        foreach (var shared in fixture["cases"]!.AsArray()) cases.Add(shared!["name"]!.GetValue<string>(), shared["value"]?.ToJsonString() ?? "null", shared["summary"]!.GetValue<string>());
        return cases;
    }

    [Theory]
    [MemberData(nameof(SharedCases))]
    public void The_shared_cases_as_dotnet_values(string name, string json, string summary)
    {
        Assert.True(summary == GovernanceClient.SummaryOf(Native(JsonSerializer.Deserialize<JsonElement>(json))), name);
    }

    [Theory]
    [MemberData(nameof(SharedCases))]
    public void The_shared_cases_as_json(string name, string json, string summary)
    {
        Assert.True(summary == GovernanceClient.SummaryOf(JsonSerializer.Deserialize<JsonElement>(json)), name);
        Assert.True(summary == GovernanceClient.SummaryOf(JsonNode.Parse(json)), name);
    }

    [Fact]
    public void Dotnet_values_in_the_same_words()
    {
        Assert.Equal("returned binary of 6 bytes", GovernanceClient.SummaryOf("secret"u8.ToArray()));
        Assert.Equal("returned list of 2 items", GovernanceClient.SummaryOf(new HashSet<string> { "a", "b" }));
        Assert.Equal("returned list of 1 item", GovernanceClient.SummaryOf(new List<int> { 1 }));
        Assert.Equal("returned object of 1 key", GovernanceClient.SummaryOf(new Dictionary<string, string> { ["iban"] = "DE89" }));
        Assert.Equal("returned number", GovernanceClient.SummaryOf(9.99m));
        Assert.Equal("returned Customer", GovernanceClient.SummaryOf(new Customer("DE89370400440532013000")));
        Assert.Equal("returned KeyValuePair", GovernanceClient.SummaryOf(new KeyValuePair<string, int>("a", 1)));
    }

    /// <summary>JSON as the plain .NET values a function returns: Dictionary, List, string, double, bool, null.</summary>
    private static object? Native(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.Object => element.EnumerateObject().ToDictionary(property => property.Name, property => Native(property.Value)),
        JsonValueKind.Array => element.EnumerateArray().Select(Native).ToList(),
        JsonValueKind.String => element.GetString(),
        JsonValueKind.Number => element.GetDouble(),
        JsonValueKind.True => true,
        JsonValueKind.False => false,
        _ => null,
    };

    private sealed record Customer(string Iban);
}
