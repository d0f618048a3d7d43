using System.Collections;
using System.Globalization;
using System.Numerics;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace AgentGovernance;

/// <summary>
/// The default result summary of a guarded call: the result's shape, never its content (results
/// may hold secrets), in the words every SDK uses. sdk/fixtures/result-summaries.json states the
/// rule; the TypeScript and Python SDKs write the same text for the same value.
/// </summary>
internal static class ResultSummary
{
    /// <summary>
    /// <c>returned null</c>, <c>returned boolean</c>, <c>returned number</c>, <c>returned string of 12 characters</c>
    /// (Unicode code points), <c>returned binary of 16 bytes</c>, <c>returned list of 3 items</c> (a collection),
    /// <c>returned object of 2 keys</c> (a dictionary or JSON object; the keys are not copied), else the type's name.
    /// </summary>
    public static string Of(object? value) => value switch
    {
        null => "returned null",
        bool => "returned boolean",
        sbyte or byte or short or ushort or int or uint or long or ulong or nint or nuint or float or double or decimal or Half or Int128 or UInt128 or BigInteger => "returned number",
        string text => OfString(text),
        byte[] bytes => $"returned binary of {Counted(bytes.Length, "byte")}",
        ReadOnlyMemory<byte> memory => $"returned binary of {Counted(memory.Length, "byte")}",
        JsonElement element => OfJson(element),
        JsonNode node => OfJson(node),
        _ => OfShape(value),
    };

    /// <summary><c>raised</c> and the exception's type name, never its message (which may quote the call's data).</summary>
    public static string OfException(Exception error)
    {
        ArgumentNullException.ThrowIfNull(error);
        return $"raised {TypeName(error.GetType())}";
    }

    private static string OfString(string text) => $"returned string of {Counted(text.EnumerateRunes().Count(), "character")}";

    private static string OfJson(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.Object => $"returned object of {Counted(element.EnumerateObject().Count(), "key")}",
        JsonValueKind.Array => $"returned list of {Counted(element.GetArrayLength(), "item")}",
        JsonValueKind.String => OfString(element.GetString()!),
        JsonValueKind.Number => "returned number",
        JsonValueKind.True or JsonValueKind.False => "returned boolean",
        _ => "returned null",
    };

    private static string OfJson(JsonNode node) => node switch
    {
        JsonObject json => $"returned object of {Counted(json.Count, "key")}",
        JsonArray json => $"returned list of {Counted(json.Count, "item")}",
        _ => node.GetValueKind() switch
        {
            JsonValueKind.String => OfString(node.GetValue<string>()),
            JsonValueKind.Number => "returned number",
            JsonValueKind.True or JsonValueKind.False => "returned boolean",
            _ => "returned null",
        },
    };

    /// <summary>A dictionary or collection by its count (generic ones too: a HashSet is no ICollection), else the type's name.</summary>
    private static string OfShape(object value)
    {
        var type = value.GetType();
        var contracts = type.GetInterfaces();
        var isDictionary = value is IDictionary || contracts.Any(contract => IsGeneric(contract, typeof(IDictionary<,>)) || IsGeneric(contract, typeof(IReadOnlyDictionary<,>)));
        var count = value is ICollection collection ? collection.Count : GenericCount(value, contracts);
        if (count is { } size) return isDictionary ? $"returned object of {Counted(size, "key")}" : $"returned list of {Counted(size, "item")}";
        return $"returned {TypeName(type)}";
    }

    private static int? GenericCount(object value, Type[] contracts)
    {
        var counted = contracts.FirstOrDefault(contract => IsGeneric(contract, typeof(ICollection<>)) || IsGeneric(contract, typeof(IReadOnlyCollection<>)));
        return counted?.GetProperty(nameof(ICollection<object>.Count))?.GetValue(value) as int?;
    }

    private static bool IsGeneric(Type contract, Type definition) => contract.IsGenericType && contract.GetGenericTypeDefinition() == definition;

    /// <summary>The type's name without the generic arity (<c>List</c>, not <c>List`1</c>).</summary>
    private static string TypeName(Type type)
    {
        var tick = type.Name.IndexOf('`', StringComparison.Ordinal);
        return tick < 0 ? type.Name : type.Name[..tick];
    }

    private static string Counted(int count, string unit) => string.Create(CultureInfo.InvariantCulture, $"{count} {unit}{(count == 1 ? "" : "s")}");
}
