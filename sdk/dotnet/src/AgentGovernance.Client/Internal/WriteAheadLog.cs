using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;
using System.Globalization;
using Microsoft.Win32.SafeHandles;

namespace AgentGovernance.Internal;

/// <summary>
/// The audit events' write-ahead file, in the format the Python and TypeScript SDKs write: one
/// JSON line <c>{"event": {...}}</c> per event, and one line <c>{"ack": [ids]}</c> per batch the
/// gateway took. Each event is written to the file (the operating system has it: a crash of the
/// process loses nothing) before <see cref="AppendAsync"/> completes; it is fsynced
/// (<see cref="AuditDurability"/>) either with the next group commit, at most
/// <c>syncInterval</c> later, one fsync for every event of that window (a power loss or an
/// operating-system crash loses at most that window's events), or before AppendAsync completes
/// (<c>Sync</c>: events appended together still share one fsync). Emptied when nothing is left
/// unacknowledged, rewritten with only the unacknowledged events when it grows. One live client
/// per file: <c>&lt;file&gt;.lock</c> is held exclusively (an OS lock, so a crashed process leaves
/// no stale lock).
/// </summary>
internal sealed partial class WriteAheadLog : IAsyncDisposable
{
    /// <summary>Rewrite the file once this much was appended while events stayed unacknowledged.</summary>
    private const long CompactAfterBytes = 4 * 1024 * 1024;

    private readonly string path;
    private readonly FileStream lockFile;
    private readonly AuditDurability durability;
    private readonly TimeSpan syncInterval;
    private readonly object sync = new();
    /// <summary>
    /// The unacknowledged events in the order written: a list for the order, a dictionary of its
    /// nodes by event id, so that acknowledging an event costs O(1) however many wait (an ordered
    /// dictionary's removal shifts every entry after it, under the lock every append takes).
    /// Bounded by what the gateway has not acknowledged yet.
    /// </summary>
    private readonly OpenEvents open = new();
    private readonly SemaphoreSlim syncRequested = new(0);
    private readonly CancellationTokenSource closing = new();
    private readonly Task syncer;
    private List<TaskCompletionSource> syncWaiters = [];
    private FileStream file;
    private long appendedBytes;
    private bool dirty;
    private bool closed;

    private WriteAheadLog(string path, FileStream lockFile, IReadOnlyList<AuditEvent> unacknowledged, AuditDurability durability, TimeSpan syncInterval)
    {
        this.path = path;
        this.lockFile = lockFile;
        this.durability = durability;
        this.syncInterval = syncInterval;
        foreach (var auditEvent in unacknowledged) open.Set(auditEvent);
        Unacknowledged = unacknowledged;
        file = Rewrite(previous: null);
        syncer = Task.Run(SyncLoopAsync);
    }

    /// <summary>The events the file held unacknowledged when it was opened, in the order written.</summary>
    public IReadOnlyList<AuditEvent> Unacknowledged { get; }

    /// <summary>The file's path.</summary>
    public string FilePath => path;

    /// <summary>Opens (creating) the file, taking its lock, or throws when another live client holds it.</summary>
    public static WriteAheadLog Open(string path, AuditDurability durability, TimeSpan syncInterval)
    {
        var fullPath = Path.GetFullPath(path);
        Directory.CreateDirectory(Path.GetDirectoryName(fullPath)!);
        var lockFile = TakeLock(fullPath) ?? throw new InvalidOperationException($"the audit write-ahead file {fullPath} is in use by another client; give each client its own AuditWalPath");
        return Opened(fullPath, lockFile, durability, syncInterval);
    }

    /// <summary>
    /// The default file of one client of <paramref name="agentId"/> in this process
    /// (<c>audit-&lt;agent&gt;-&lt;pid&gt;-&lt;n&gt;.wal</c> in <paramref name="directory"/>, the first
    /// <c>n</c> no live client holds), having first taken over what clients of processes that
    /// are gone left unacknowledged in theirs (their files are removed once their events are in this one).
    /// </summary>
    public static WriteAheadLog OpenDefault(string directory, string agentId, AuditDurability durability, TimeSpan syncInterval)
    {
        Directory.CreateDirectory(directory);
        var prefix = $"audit-{FileNameOf(agentId)}-";
        var own = $"{prefix}{Environment.ProcessId.ToString(CultureInfo.InvariantCulture)}-";
        for (var slot = 0; ; slot++)
        {
            var candidate = Path.Combine(directory, $"{own}{slot.ToString(CultureInfo.InvariantCulture)}.wal");
            if (TakeLock(candidate) is not { } lockFile) continue;
            var log = Opened(candidate, lockFile, durability, syncInterval);
            log.AdoptOrphans(directory, prefix);
            return log;
        }
    }

    private static WriteAheadLog Opened(string fullPath, FileStream lockFile, AuditDurability durability, TimeSpan syncInterval)
    {
        try
        {
            return new WriteAheadLog(fullPath, lockFile, ReadUnacknowledged(fullPath), durability, syncInterval);
        }
        catch
        {
            lockFile.Dispose();
            throw;
        }
    }

    /// <summary>Events taken over from files of clients that are gone, in the order they were written.</summary>
    public List<AuditEvent> Adopted { get; } = [];

    /// <summary>
    /// Takes over the unacknowledged events of every other file of this agent whose lock no live
    /// client holds: written (fsynced) into this file first, then the orphan removed, so a crash
    /// in between only means a resend, which the gateway records once.
    /// </summary>
    private void AdoptOrphans(string directory, string prefix)
    {
        // audit-<agent>.wal: the one default file of earlier versions.
        var legacy = Path.Combine(directory, $"{prefix[..^1]}.wal");
        foreach (var orphan in Directory.EnumerateFiles(directory, $"{prefix}*.wal").Append(legacy).Where(File.Exists))
        {
            if (string.Equals(orphan, path, StringComparison.Ordinal)) continue;
            using var orphanLock = TakeLock(orphan);
            if (orphanLock is null) continue;
            var events = ReadUnacknowledged(orphan).Where(auditEvent => !open.ContainsKey(auditEvent.EventId)).ToList();
            if (events.Count > 0)
            {
                lock (sync)
                {
                    foreach (var auditEvent in events) Write(auditEvent);
                    file.Flush(flushToDisk: true);
                    dirty = false;
                }
                Adopted.AddRange(events);
            }
            File.Delete(orphan);
            File.Delete(orphan + ".lock");
        }
    }

    /// <summary>Writes the event; completes once it is in the file, or fsynced too under <see cref="AuditDurability.Sync"/>.</summary>
    public Task AppendAsync(AuditEvent auditEvent)
    {
        TaskCompletionSource? waiter = null;
        lock (sync)
        {
            ObjectDisposedException.ThrowIf(closed, this);
            Write(auditEvent);
            if (durability == AuditDurability.Sync)
            {
                waiter = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                syncWaiters.Add(waiter);
            }
        }
        if (waiter is null) return Task.CompletedTask;
        syncRequested.Release();
        return waiter.Task;
    }

    /// <summary>Records that the gateway has these events; empties or compacts the file when it can.</summary>
    public Task AcknowledgeAsync(IReadOnlyCollection<string> eventIds)
    {
        lock (sync)
        {
            if (closed) return Task.CompletedTask;
            foreach (var id in eventIds) open.Remove(id);
            if (open.Count == 0 || appendedBytes > CompactAfterBytes)
            {
                file = Rewrite(file);
                dirty = false;
                return Task.CompletedTask;
            }
            // Not fsynced: a lost acknowledgement only means a resend, which the gateway records once.
            var line = new MemoryStream();
            using (var json = new Utf8JsonWriter(line))
            {
                json.WriteStartObject();
                json.WriteStartArray("ack");
                foreach (var id in eventIds) json.WriteStringValue(id);
                json.WriteEndArray();
                json.WriteEndObject();
            }
            line.WriteByte((byte)'\n');
            file.Write(line.GetBuffer().AsSpan(0, (int)line.Length));
        }
        return Task.CompletedTask;
    }

    /// <summary>As <see cref="DisposeAsync"/>, without waiting for the group commit's loop, which ends by itself once closed.</summary>
    public void Close()
    {
        lock (sync)
        {
            if (closed) return;
            closed = true;
        }
        closing.Cancel();
        lock (sync)
        {
            SyncNow();
            file.Dispose();
        }
        lockFile.Dispose();
    }

    /// <summary>Fsyncs what was written, closes the file and releases its lock.</summary>
    public async ValueTask DisposeAsync()
    {
        lock (sync)
        {
            if (closed) return;
            closed = true;
        }
        await closing.CancelAsync().ConfigureAwait(false);
        await syncer.ConfigureAwait(false);
        lock (sync)
        {
            SyncNow();
            file.Dispose();
        }
        await lockFile.DisposeAsync().ConfigureAwait(false);
        closing.Dispose();
        syncRequested.Dispose();
    }

    /// <summary>Under <c>sync</c>: the event's line appended (one write), and the event kept as unacknowledged.</summary>
    private void Write(AuditEvent auditEvent)
    {
        var line = LineOf(auditEvent);
        file.Write(line);
        open.Set(auditEvent);
        appendedBytes += line.Length;
        dirty = true;
    }

    /// <summary>
    /// The group commit: one fsync per window for what was written in it, at once when a
    /// <c>Sync</c> append waits for it (appends that arrive meanwhile share it).
    /// </summary>
    private async Task SyncLoopAsync()
    {
        while (!closing.IsCancellationRequested)
        {
            try
            {
                await syncRequested.WaitAsync(syncInterval, closing.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }
            SyncWritten();
        }
    }

    /// <summary>
    /// Fsyncs what was written and answers the appends waiting for it. On POSIX the fsync runs
    /// outside the lock (the file's handle held by a reference), so appends never wait for the
    /// disk: what they write meanwhile goes with the next window.
    /// </summary>
    private void SyncWritten()
    {
        List<TaskCompletionSource> waiting;
        SafeFileHandle handle;
        lock (sync)
        {
            waiting = syncWaiters;
            if (waiting.Count > 0) syncWaiters = [];
            if (!dirty || OperatingSystem.IsWindows() || closed)
            {
                SyncNow(waiting);
                return;
            }
            dirty = false;
            handle = file.SafeFileHandle;
        }
        var added = false;
        try
        {
            handle.DangerousAddRef(ref added);
            if (NativeMethods.Fsync((int)handle.DangerousGetHandle()) != 0) throw new IOException($"fsync of {path} failed: errno {Marshal.GetLastPInvokeError()}");
            foreach (var waiter in waiting) waiter.TrySetResult();
        }
        catch (Exception error) when (error is IOException or ObjectDisposedException)
        {
            // The file was replaced meanwhile (a compaction, which fsyncs what it writes) or the fsync failed.
            if (error is IOException) foreach (var waiter in waiting) waiter.TrySetException(error);
            else foreach (var waiter in waiting) waiter.TrySetResult();
        }
        finally
        {
            if (added) handle.DangerousRelease();
        }
    }

    /// <summary>Under <c>sync</c>: fsyncs what was written and answers <paramref name="waiting"/>.</summary>
    private void SyncNow(List<TaskCompletionSource>? waiting = null)
    {
        waiting ??= syncWaiters;
        if (ReferenceEquals(waiting, syncWaiters) && waiting.Count > 0) syncWaiters = [];
        try
        {
            if (dirty) file.Flush(flushToDisk: true);
            dirty = false;
            foreach (var waiter in waiting) waiter.TrySetResult();
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            foreach (var waiter in waiting) waiter.TrySetException(error);
        }
    }

    /// <summary>
    /// Replaces the file by the unacknowledged events only, atomically: a temporary file, fsync,
    /// rename, fsync of the directory, so an event already on disk stays on disk whatever happens next.
    /// </summary>
    private FileStream Rewrite(FileStream? previous)
    {
        // Closed first: Windows refuses to replace or truncate a file that is still open.
        previous?.Dispose();
        if (open.Count == 0)
        {
            var emptied = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.Read, bufferSize: 0);
            emptied.Flush(flushToDisk: true);
            appendedBytes = 0;
            return emptied;
        }
        var temporary = path + ".compact";
        using (var compacted = new FileStream(temporary, FileMode.Create, FileAccess.Write, FileShare.None, bufferSize: 0))
        {
            var bytes = new MemoryStream();
            foreach (var auditEvent in open.InOrder) bytes.Write(LineOf(auditEvent));
            compacted.Write(bytes.GetBuffer().AsSpan(0, (int)bytes.Length));
            compacted.Flush(flushToDisk: true);
        }
        File.Move(temporary, path, overwrite: true);
        SyncDirectory(Path.GetDirectoryName(path)!);
        appendedBytes = 0;
        var reopened = new FileStream(path, FileMode.Open, FileAccess.Write, FileShare.Read, bufferSize: 0);
        reopened.Seek(0, SeekOrigin.End);
        return reopened;
    }

    private sealed class OpenEvents
    {
        private readonly Dictionary<string, LinkedListNode<AuditEvent>> byId = new(StringComparer.Ordinal);
        private readonly LinkedList<AuditEvent> order = new();

        public int Count => byId.Count;

        public IEnumerable<AuditEvent> InOrder => order;

        public bool ContainsKey(string eventId) => byId.ContainsKey(eventId);

        /// <summary>Adds the event, or replaces the one of its id in place.</summary>
        public void Set(AuditEvent auditEvent)
        {
            if (byId.TryGetValue(auditEvent.EventId, out var node)) node.Value = auditEvent;
            else byId[auditEvent.EventId] = order.AddLast(auditEvent);
        }

        public void Remove(string eventId)
        {
            if (byId.Remove(eventId, out var node)) order.Remove(node);
        }
    }

    private static byte[] LineOf(AuditEvent auditEvent)
    {
        var line = new byte[auditEvent.Json.Length + 11];
        "{\"event\":"u8.CopyTo(line);
        auditEvent.Json.CopyTo(line, 9);
        line[^2] = (byte)'}';
        line[^1] = (byte)'\n';
        return line;
    }

    /// <summary>
    /// The file's events never acknowledged, in the order written. A line that is not JSON (a
    /// crash mid-append, never acknowledged to anyone) is skipped.
    /// </summary>
    private static List<AuditEvent> ReadUnacknowledged(string path)
    {
        if (!File.Exists(path)) return [];
        var events = new Dictionary<string, AuditEvent>(StringComparer.Ordinal);
        var order = new List<string>();
        foreach (var line in File.ReadLines(path, Encoding.UTF8))
        {
            if (string.IsNullOrWhiteSpace(line)) continue;
            try
            {
                using var record = JsonDocument.Parse(line);
                var root = record.RootElement;
                if (root.ValueKind != JsonValueKind.Object) continue;
                if (root.TryGetProperty("event", out var body) && body.ValueKind == JsonValueKind.Object && body.TryGetProperty("eventId", out var id) && id.ValueKind == JsonValueKind.String)
                {
                    var eventId = id.GetString()!;
                    if (!events.ContainsKey(eventId)) order.Add(eventId);
                    events[eventId] = new AuditEvent(eventId, Encoding.UTF8.GetBytes(body.GetRawText()));
                }
                if (root.TryGetProperty("ack", out var acks) && acks.ValueKind == JsonValueKind.Array)
                {
                    foreach (var ack in acks.EnumerateArray()) if (ack.ValueKind == JsonValueKind.String) events.Remove(ack.GetString()!);
                }
            }
            catch (JsonException)
            {
                continue;
            }
        }
        return [.. order.Where(events.ContainsKey).Select(id => events[id])];
    }

    /// <summary>
    /// Holds <c>&lt;file&gt;.lock</c> exclusively for the client's life, or null when a live client
    /// holds it. Two clients on one file each resent the other's events and, emptying the file
    /// when their own were acknowledged, dropped the other's unacknowledged ones.
    /// </summary>
    private static FileStream? TakeLock(string path)
    {
        var lockPath = path + ".lock";
        try
        {
            var lockFile = new FileStream(lockPath, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None, bufferSize: 0);
            lockFile.SetLength(0);
            lockFile.Write(Encoding.ASCII.GetBytes(Environment.ProcessId.ToString(CultureInfo.InvariantCulture)));
            return lockFile;
        }
        catch (IOException)
        {
            return null;
        }
    }

    /// <summary>An agent id as part of a file name: anything but letters, digits, '-' and '_' becomes '_'.</summary>
    private static string FileNameOf(string agentId) =>
        string.Create(agentId.Length, agentId, (chars, id) =>
        {
            for (var i = 0; i < id.Length; i++) chars[i] = char.IsAsciiLetterOrDigit(id[i]) || id[i] is '-' or '_' ? id[i] : '_';
        });

    /// <summary>Makes a rename in <paramref name="directory"/> durable (POSIX: fsync of the directory; Windows renames durably).</summary>
    private static void SyncDirectory(string directory)
    {
        if (OperatingSystem.IsWindows()) return;
        var descriptor = NativeMethods.Open(directory, 0);
        if (descriptor < 0) return;
        try
        {
            _ = NativeMethods.Fsync(descriptor);
        }
        finally
        {
            _ = NativeMethods.Close(descriptor);
        }
    }

    private static partial class NativeMethods
    {
        [LibraryImport("libc", EntryPoint = "open", StringMarshalling = StringMarshalling.Utf8)]
        public static partial int Open(string path, int flags);

        [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
        public static partial int Fsync(int descriptor);

        [LibraryImport("libc", EntryPoint = "close")]
        public static partial int Close(int descriptor);
    }
}
