using System.Globalization;
using System.Text;
using System.Text.Json;

namespace AgentGovernance.AspNetCore;

/// <summary>
/// RFC 8785 (JCS) canonical JSON, the text a tool call's decision token binds its arguments by
/// (docs/security.md "Decision tokens"): object keys sorted by UTF-16 code units, numbers as
/// ECMAScript writes them, strings as ECMAScript's <c>JSON.stringify</c> escapes them, no
/// whitespace. Values are read as the gateway (JavaScript) reads them: every number as a double
/// (an integer past 2^53 rounded), the last of duplicate keys kept.
/// </summary>
public static class CanonicalJson
{
    /// <summary>The canonical text of <paramref name="value"/>.</summary>
    /// <exception cref="DecisionTokenException">A number that is not finite as a double, or a string that is not valid UTF-16 (<see cref="DecisionTokenProblem.Malformed"/>).</exception>
    public static string Serialize(JsonElement value)
    {
        var text = new StringBuilder();
        Write(text, value);
        return text.ToString();
    }

    /// <summary>The canonical text of an object of <paramref name="properties"/> (an MCP SDK's tool arguments).</summary>
    /// <exception cref="DecisionTokenException">As <see cref="Serialize(JsonElement)"/>.</exception>
    public static string Serialize(IEnumerable<KeyValuePair<string, JsonElement>> properties)
    {
        ArgumentNullException.ThrowIfNull(properties);
        var text = new StringBuilder();
        WriteObject(text, properties);
        return text.ToString();
    }

    private static void Write(StringBuilder text, JsonElement value)
    {
        switch (value.ValueKind)
        {
            case JsonValueKind.Object:
                WriteObject(text, value.EnumerateObject().Select(property => KeyValuePair.Create(property.Name, property.Value)));
                break;
            case JsonValueKind.Array:
                text.Append('[');
                var first = true;
                foreach (var item in value.EnumerateArray())
                {
                    if (!first) text.Append(',');
                    first = false;
                    Write(text, item);
                }
                text.Append(']');
                break;
            case JsonValueKind.String:
                WriteString(text, StringOf(value));
                break;
            case JsonValueKind.Number:
                text.Append(NumberText(value.GetRawText()));
                break;
            case JsonValueKind.True:
                text.Append("true");
                break;
            case JsonValueKind.False:
                text.Append("false");
                break;
            case JsonValueKind.Null:
                text.Append("null");
                break;
            default:
                throw Malformed("a value in the arguments is not JSON");
        }
    }

    private static void WriteObject(StringBuilder text, IEnumerable<KeyValuePair<string, JsonElement>> properties)
    {
        // Last of duplicate keys wins, as JSON.parse keeps it; string.CompareOrdinal orders by UTF-16 code units (RFC 8785 3.2.3).
        var byKey = new Dictionary<string, JsonElement>(StringComparer.Ordinal);
        foreach (var (key, value) in properties) byKey[key] = value;
        text.Append('{');
        var first = true;
        foreach (var key in byKey.Keys.Order(StringComparer.Ordinal))
        {
            if (!first) text.Append(',');
            first = false;
            WriteString(text, key);
            text.Append(':');
            Write(text, byKey[key]);
        }
        text.Append('}');
    }

    private static string StringOf(JsonElement value)
    {
        try
        {
            return value.GetString()!;
        }
        catch (InvalidOperationException)
        {
            throw Malformed("a string in the arguments is not valid UTF-16");
        }
    }

    /// <summary>ECMAScript's JSON.stringify escapes (RFC 8785 3.2.2.2): the quote, the backslash and controls below U+0020 only; a lone surrogate as \uXXXX.</summary>
    private static void WriteString(StringBuilder text, string value)
    {
        text.Append('"');
        for (var at = 0; at < value.Length; at++)
        {
            var character = value[at];
            switch (character)
            {
                case '"': text.Append("\\\""); break;
                case '\\': text.Append("\\\\"); break;
                case '\b': text.Append("\\b"); break;
                case '\f': text.Append("\\f"); break;
                case '\n': text.Append("\\n"); break;
                case '\r': text.Append("\\r"); break;
                case '\t': text.Append("\\t"); break;
                default:
                    if (char.IsHighSurrogate(character) && at + 1 < value.Length && char.IsLowSurrogate(value[at + 1]))
                    {
                        text.Append(character).Append(value[++at]);
                    }
                    else if (character < ' ' || char.IsSurrogate(character))
                    {
                        text.Append("\\u").Append(((int)character).ToString("x4", CultureInfo.InvariantCulture));
                    }
                    else
                    {
                        text.Append(character);
                    }
                    break;
            }
        }
        text.Append('"');
    }

    /// <summary>
    /// A JSON number's text as ECMAScript's Number::toString writes its double (RFC 8785 3.2.2.3):
    /// the shortest digits that read back as the same double ("R" finds them), placed by
    /// ECMAScript's rules (plain up to 21 integer digits, down to 0.000001, else exponent form).
    /// </summary>
    internal static string NumberText(string raw)
    {
        if (!double.TryParse(raw, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) || !double.IsFinite(value)) throw Malformed("a number in the arguments is not finite");
        if (value == 0) return "0";
        var shortest = Math.Abs(value).ToString("R", CultureInfo.InvariantCulture);
        var e = shortest.IndexOfAny(['E', 'e']);
        var mantissa = e == -1 ? shortest : shortest[..e];
        var exponent = e == -1 ? 0 : int.Parse(shortest[(e + 1)..], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture);
        var dot = mantissa.IndexOf('.', StringComparison.Ordinal);
        var whole = dot == -1 ? mantissa : mantissa[..dot];
        var all = dot == -1 ? mantissa : whole + mantissa[(dot + 1)..];
        var significant = all.TrimStart('0');
        // The value is 0.<digits> x 10^point.
        var point = whole.Length + exponent - (all.Length - significant.Length);
        var digits = significant.TrimEnd('0');
        var count = digits.Length;
        var sign = value < 0 ? "-" : "";
        if (count <= point && point <= 21) return sign + digits + new string('0', point - count);
        if (0 < point && point <= 21) return $"{sign}{digits[..point]}.{digits[point..]}";
        if (-6 < point && point <= 0) return $"{sign}0.{new string('0', -point)}{digits}";
        var shown = point - 1;
        return $"{sign}{digits[0]}{(count > 1 ? "." + digits[1..] : "")}e{(shown >= 0 ? "+" : "-")}{Math.Abs(shown).ToString(CultureInfo.InvariantCulture)}";
    }

    private static DecisionTokenException Malformed(string detail) => new(DecisionTokenProblem.Malformed, $"Malformed tool call: {detail}");
}
