import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PublishOutputError, UsageError } from "./apphost-errors.js";
import { parseCli } from "./cli-options.js";
import { PUBLISH_MARKER, prepareOutDir } from "./publish-command.js";
import { defaultImageName } from "./publish-image.js";
import { runCli } from "./test-fixtures/cli-process.js";

describe("publish on the command line", () => {
  it("reads the target, the output dir (from the working dir), the image and voter1's ports", () => {
    expect(parseCli(["publish", "--target", "compose", "--out", "deploy"], "/work")).toMatchObject({
      command: "publish",
      publish: {
        target: "compose",
        outDir: "/work/deploy",
        build: false,
        image: defaultImageName(),
        ports: { httpPort: 7101, peerPort: 7201 },
      },
    });
    const options = parseCli(
      [
        "publish",
        "--target",
        "kubernetes",
        "--out",
        "/abs",
        "--build",
        "--image",
        "registry.example:5000/kl/voter:2",
      ],
      "/work",
    );
    expect(options.publish).toMatchObject({ target: "kubernetes", outDir: "/abs", build: true });
    expect(options.publish?.image).toBe("registry.example:5000/kl/voter:2");
    expect(
      parseCli(["publish", "--target", "compose", "--out", "d", "--http-port", "8101", "--peer-port", "8201"])
        .publish?.ports,
    ).toEqual({ httpPort: 8101, peerPort: 8201 });
  });

  it("refuses a missing or unknown target, a missing --out, bad ports or image, and arguments", () => {
    expect(() => parseCli(["publish", "--out", "d"])).toThrow(/publish needs --target compose\|kubernetes/);
    expect(() => parseCli(["publish", "--target", "swarm", "--out", "d"])).toThrow(
      /--target takes compose or kubernetes, not "swarm"/,
    );
    expect(() => parseCli(["publish", "--target", "compose"])).toThrow(/publish needs --out DIR/);
    expect(() => parseCli(["publish", "--target", "compose", "--out", "d", "--http-port", "65535"])).toThrow(
      /--http-port takes a port from 1 to 65533/,
    );
    expect(() =>
      parseCli([
        "publish",
        "--target",
        "compose",
        "--out",
        "d",
        "--http-port",
        "7201",
        "--peer-port",
        "7202",
      ]),
    ).toThrow(/overlap/);
    expect(() => parseCli(["publish", "--target", "compose", "--out", "d", "--image", "Bad Image"])).toThrow(
      UsageError,
    );
    expect(() => parseCli(["publish", "--target", "compose", "--out", "d", "extra"])).toThrow(
      /takes no arguments/,
    );
    // publish's options belong to publish.
    expect(() => parseCli(["up", "--target", "compose"])).toThrow(/up does not take --target/);
    expect(() => parseCli(["publish", "--target", "compose", "--out", "d", "--detach"])).toThrow(
      /publish does not take --detach/,
    );
  });

  it("exits with 2 and the usage hint for a bad publish command line", async () => {
    const result = await runCli(["publish", "--target", "helm", "--out", "somewhere"]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--target takes compose or kubernetes, not "helm" [AppHostUsage]');
    expect(result.stderr).toContain("pnpm apphost --help");
    expect((await runCli(["--help"])).stdout).toContain("publish --target compose|kubernetes");
  });
});

describe("publish's output dir", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const temp = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "keyload-publish-out-"));
    dirs.push(dir);
    return dir;
  };

  it("takes a new or empty dir, or an earlier publish's output", () => {
    const parent = temp();
    expect(prepareOutDir(join(parent, "new", "deploy"))).toBeUndefined();
    expect(prepareOutDir(temp())).toBeUndefined();
    const earlier = temp();
    writeFileSync(
      join(earlier, PUBLISH_MARKER),
      JSON.stringify({ publishedBy: "keyload-apphost", targets: ["compose"] }),
    );
    mkdirSync(join(earlier, "secrets"));
    expect(prepareOutDir(earlier)?.targets).toEqual(["compose"]);
  });

  it("refuses a dir of someone else's, and a file", async () => {
    const theirs = temp();
    writeFileSync(join(theirs, "compose.yaml"), "services: {}\n");
    expect(() => prepareOutDir(theirs)).toThrow(PublishOutputError);
    expect(() => prepareOutDir(theirs)).toThrow(/is not empty and holds no earlier publish output/);
    writeFileSync(join(theirs, PUBLISH_MARKER), "{}");
    expect(() => prepareOutDir(theirs)).toThrow(PublishOutputError);
    expect(() => prepareOutDir(join(theirs, "compose.yaml"))).toThrow(/is not a directory/);

    const result = await runCli(["publish", "--target", "compose", "--out", theirs]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain("[AppHostPublishOutput]");
  });
});
