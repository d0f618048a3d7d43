using System.Buffers;
using System.Security.Cryptography;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace AgentGovernance.Internal;

/// <summary>
/// Turns a call's arguments and context (any .NET values) into JSON, the form both transports,
/// the cache key and the audit trail are made of.
/// </summary>
internal sealed class JsonArguments
{
    /// <summary>NaN and ±Infinity throw: JSON has no such numbers.</summary>
    private readonly JsonSerializerOptions strict = new(JsonSerializerDefaults.Web);

    /// <summary>NaN and ±Infinity become the strings "NaN", "Infinity", "-Infinity".</summary>
    private readonly JsonSerializerOptions lenient = new(JsonSerializerDefaults.Web) { NumberHandling = JsonNumberHandling.AllowNamedFloatingPointLiterals };

    /// <summary>
    /// The values of a check. A number that is not finite is refused before anything is sent, as
    /// the gateway refuses it: a policy would otherwise judge a value the call never gets (the
    /// TypeScript SDK does the same).
    /// </summary>
    public IReadOnlyDictionary<string, JsonElement> ForCheck(IEnumerable<KeyValuePair<string, object?>>? values, string part)
    {
        var result = new Dictionary<string, JsonElement>(StringComparer.Ordinal);
        if (values is null) return result;
        foreach (var (name, value) in values)
        {
            result[name] = ToElement(value, strict, out var nonFinite);
            if (nonFinite) throw new GatewayRejectedException(GatewayRejection.InvalidArgument, $"{part}: {name} is not a finite number");
        }
        return result;
    }

    /// <summary>
    /// The values of an audit event: the call already ran, so its record keeps a non-finite number
    /// as a string rather than being refused by the gateway and lost (as the Python SDK does).
    /// </summary>
    public IReadOnlyDictionary<string, JsonElement> ForAudit(IEnumerable<KeyValuePair<string, object?>>? values)
    {
        var result = new Dictionary<string, JsonElement>(StringComparer.Ordinal);
        if (values is null) return result;
        foreach (var (name, value) in values) result[name] = ToElement(value, lenient, out _);
        return result;
    }

    private JsonElement ToElement(object? value, JsonSerializerOptions options, out bool nonFinite)
    {
        nonFinite = false;
        switch (value)
        {
            case null:
                return JsonSerializer.SerializeToElement<object?>(null, options);
            case JsonElement element:
                return element.Clone();
        }
        try
        {
            return JsonSerializer.SerializeToElement(value, value.GetType(), options);
        }
        catch (ArgumentException) when (ReferenceEquals(options, strict))
        {
            // Only a non-finite number fails strictly and passes leniently.
            nonFinite = TrySerialize(value, lenient, out _);
            return nonFinite ? default : AsText(value, options);
        }
        catch (Exception error) when (error is NotSupportedException or JsonException or InvalidOperationException or ArgumentException)
        {
            // A value JSON cannot carry (a cycle, a delegate, a pointer) is sent as its text, as the Python SDK does.
            return AsText(value, options);
        }
    }

    private static bool TrySerialize(object value, JsonSerializerOptions options, out JsonElement element)
    {
        try
        {
            element = JsonSerializer.SerializeToElement(value, value.GetType(), options);
            return true;
        }
        catch (Exception error) when (error is NotSupportedException or JsonException or InvalidOperationException or ArgumentException)
        {
            element = default;
            return false;
        }
    }

    private static JsonElement AsText(object value, JsonSerializerOptions options) => JsonSerializer.SerializeToElement(value.ToString() ?? "", options);

    /// <summary>
    /// SHA-256 of the canonical JSON (object keys sorted) of everything a decision can depend on
    /// that the client sends (the trace id excluded): the same question asked with its keys in
    /// another order is the same key.
    /// </summary>
    public static string HashOf(CheckRequest request)
    {
        var buffer = new ArrayBufferWriter<byte>(256);
        using (var writer = new Utf8JsonWriter(buffer))
        {
            writer.WriteStartArray();
            writer.WriteStringValue(request.AgentId);
            writer.WriteStringValue(request.Plugin);
            writer.WriteStringValue(request.Function);
            writer.WriteStringValue(request.TrustTier);
            WriteCanonical(writer, request.Arguments);
            WriteCanonical(writer, request.Context);
            writer.WriteEndArray();
        }
        return Convert.ToHexString(SHA256.HashData(buffer.WrittenSpan));
    }

    /// <summary>Writes the values as one JSON object.</summary>
    public static void WriteObject(Utf8JsonWriter writer, IReadOnlyDictionary<string, JsonElement> values)
    {
        writer.WriteStartObject();
        foreach (var (name, value) in values)
        {
            writer.WritePropertyName(name);
            value.WriteTo(writer);
        }
        writer.WriteEndObject();
    }

    private static void WriteCanonical(Utf8JsonWriter writer, IReadOnlyDictionary<string, JsonElement> values)
    {
        writer.WriteStartObject();
        foreach (var name in values.Keys.Order(StringComparer.Ordinal))
        {
            writer.WritePropertyName(name);
            WriteCanonical(writer, values[name]);
        }
        writer.WriteEndObject();
    }

    private static void WriteCanonical(Utf8JsonWriter writer, JsonElement element)
    {
        switch (element.ValueKind)
        {
            case JsonValueKind.Object:
                writer.WriteStartObject();
                foreach (var property in element.EnumerateObject().OrderBy(property => property.Name, StringComparer.Ordinal))
                {
                    writer.WritePropertyName(property.Name);
                    WriteCanonical(writer, property.Value);
                }
                writer.WriteEndObject();
                break;
            case JsonValueKind.Array:
                writer.WriteStartArray();
                foreach (var item in element.EnumerateArray()) WriteCanonical(writer, item);
                writer.WriteEndArray();
                break;
            default:
                element.WriteTo(writer);
                break;
        }
    }
}
