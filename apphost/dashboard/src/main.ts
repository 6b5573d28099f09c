import type {
  AdmissionPoint,
  DashboardHello,
  DashboardSnapshot,
  LogRow,
} from "../../src/dashboard-messages.js";
import { AdmissionView } from "./admission-view.js";
import { byId, setText } from "./dom.js";
import { LogsView } from "./logs-view.js";
import { ResourcesView } from "./resources-view.js";

/** As many points as the AppHost keeps (dashboard-server.ts): two minutes, one a second. */
const HISTORY_POINTS = 120;

interface Views {
  readonly resources: ResourcesView;
  readonly admission: AdmissionView;
  readonly logs: LogsView;
}

let views: Views | undefined;
const history = new Map<string, AdmissionPoint[]>();

function show(snapshot: DashboardSnapshot): void {
  if (views === undefined) return;
  views.resources.update(snapshot.voters);
  views.admission.update(snapshot.voters, history);
  byId("resources").dataset.updated = String(snapshot.at);
}

function remember(snapshot: DashboardSnapshot): void {
  for (const voter of snapshot.voters) {
    const points = history.get(voter.name) ?? [];
    points.push({
      at: snapshot.at,
      usage: voter.admission?.usage ?? null,
      refusals: voter.admission?.refusals ?? null,
    });
    if (points.length > HISTORY_POINTS) points.splice(0, points.length - HISTORY_POINTS);
    history.set(voter.name, points);
  }
}

function onHello(hello: DashboardHello): void {
  setText(byId("cluster"), `${hello.stateDir} · admin key ${hello.adminKeyFile}`);
  views ??= {
    resources: new ResourcesView(byId("resources-view"), hello.actions),
    admission: new AdmissionView(byId("admission-view"), HISTORY_POINTS),
    logs: new LogsView(byId("logs-view"), hello.voters),
  };
  history.clear();
  for (const [voter, points] of Object.entries(hello.history)) history.set(voter, [...points]);
  views.logs.replace(hello.logs);
  if (hello.snapshot !== null) show(hello.snapshot);
}

function connect(): void {
  const connection = byId("connection");
  const events = new EventSource("./api/events");
  const state = (value: string): void => {
    connection.dataset.state = value;
    setText(connection, value);
  };
  events.addEventListener("open", () => state("live"));
  // EventSource reconnects by itself; the AppHost greets it again with the whole picture.
  events.addEventListener("error", () =>
    state(events.readyState === EventSource.CLOSED ? "closed" : "reconnecting"),
  );
  events.addEventListener("hello", (e) =>
    onHello(JSON.parse((e as MessageEvent<string>).data) as DashboardHello),
  );
  events.addEventListener("snapshot", (e) => {
    const snapshot = JSON.parse((e as MessageEvent<string>).data) as DashboardSnapshot;
    remember(snapshot);
    show(snapshot);
  });
  events.addEventListener("logs", (e) =>
    views?.logs.add(JSON.parse((e as MessageEvent<string>).data) as LogRow[]),
  );
}

connect();
