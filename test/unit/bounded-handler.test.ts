import { boundedHandler } from "../../services/auction/bounded-handler";
import type { MessagingRequest } from "../../shared/messaging/types";

const request = (n: number): MessagingRequest =>
  ({ topic: "status", from: `0x${n}`, responseInbox: `_INBOX.${n}`, data: {} }) as unknown as MessagingRequest;

describe("boundedHandler: at most N requests of a topic at once", () => {
  it("sheds a request beyond the bound, and takes one again once a slot is free (also after a throw)", async () => {
    const releases: Array<() => void> = [];
    const handled: string[] = [];
    const shed: string[] = [];
    const handler = boundedHandler(
      2,
      (r) => {
        handled.push(r.from);
        if (r.from === "0x9") throw new Error("handler bug");
        return new Promise<void>((resolve) => releases.push(resolve));
      },
      (r) => shed.push(r.from),
    );
    const first = handler(request(1));
    const second = handler(request(2));
    await handler(request(3));
    expect(handled).toEqual(["0x1", "0x2"]);
    expect(shed).toEqual(["0x3"]);

    releases[0]();
    await first;
    await expect(handler(request(9))).rejects.toThrow("handler bug");
    const fourth = handler(request(4));
    expect(handled).toEqual(["0x1", "0x2", "0x9", "0x4"]);
    expect(shed).toEqual(["0x3"]);
    releases[1]();
    releases[2]();
    await Promise.all([second, fourth]);
  });

  it("refuses a bound that is not a positive integer", () => {
    expect(() =>
      boundedHandler(
        0,
        () => undefined,
        () => undefined,
      ),
    ).toThrow(RangeError);
  });
});
