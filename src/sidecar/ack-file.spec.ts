import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AckFile } from './ack-file';

function write(ackFile: AckFile, seq: number): Promise<void> {
  return new Promise((resolve, reject) => ackFile.write(seq, (error) => (error ? reject(error) : resolve())));
}

describe('AckFile', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ack-'));
    file = path.join(dir, 'audit.acked');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('starts at 0 and reads back the last number written', async () => {
    const first = AckFile.open(file);
    expect(first.ackedSeq).toBe(0);
    for (const seq of [5, 9, 12]) await write(first.ackFile, seq);
    first.ackFile.close();
    expect(AckFile.open(file).ackedSeq).toBe(12);
  });

  it('falls back to the other slot when the last write was torn', async () => {
    const { ackFile } = AckFile.open(file);
    await write(ackFile, 7);
    await write(ackFile, 8);
    ackFile.close();
    // The write of 8 went to the second slot: tear it.
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.from('8:12'), 0, 4, 4096);
    fs.closeSync(fd);
    expect(AckFile.open(file).ackedSeq).toBe(7);
  });

  it('after a restart, writes over the older slot, never the one holding the latest number', async () => {
    const first = AckFile.open(file);
    await write(first.ackFile, 3);
    first.ackFile.close();
    const second = AckFile.open(file);
    await write(second.ackFile, 4);
    second.ackFile.close();
    // Tear the slot 4 went to: 3 must still be there.
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.from('4:1'), 0, 3, 4096);
    fs.closeSync(fd);
    expect(AckFile.open(file).ackedSeq).toBe(3);
  });

  it('reads the plain number of earlier versions', () => {
    fs.writeFileSync(file, '4242');
    expect(AckFile.open(file).ackedSeq).toBe(4242);
  });

  it('has the blocks of both slots from its creation, so acknowledging never needs new ones', () => {
    AckFile.open(file).ackFile.close();
    expect(fs.statSync(file).size).toBe(4096 + 32);
    expect(AckFile.open(file).ackedSeq).toBe(0);
  });

  it('refuses a file that holds no valid number, naming it', () => {
    fs.writeFileSync(file, 'garbage\n');
    expect(() => AckFile.open(file)).toThrow(file);
  });
});
