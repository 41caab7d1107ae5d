import { create, fromJson, type DescMessage, type JsonValue, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  ControllerStateSchema,
  DecideJobRequestSchema,
  ExpectationsSchema,
  type ControllerState,
  type Expectations,
  ValidateJobRequestSchema,
  type DecideJobRequest,
  type ValidateJobRequest,
} from "./gen/jobdecider/v1/job_decider_pb.js";
import { JobSchema, PodSchema, type LeanPod, type Pod } from "./gen/jobdecider/v1/kubernetes_pb.js";
import { leanPodFromJson, leanPodOf, podReadsOf } from "./lean.js";

/** Options of {@link decideJobRequest} and {@link convert}: the rest of one sync's snapshot. */
export interface ConvertOptions {
  /** The decision's time; the current time when absent (the server never reads a clock). */
  now?: Date | Timestamp;
  /**
   * The `state` of the previous DecideJob response for this Job (the pod-failure backoff);
   * absent after a restart. Send it back every sync, or the backoff starts over.
   */
  state?: ControllerState | MessageInitShape<typeof ControllerStateSchema>;
  /** Ask for the explanation (why the plan is what it is); off by default. */
  explain?: boolean;
  /** The controller to decide for (a spec.managedBy value); empty means the built-in one. */
  controllerName?: string;
  /** The caller's own writes its pod cache does not show yet. */
  expectations?: Expectations | MessageInitShape<typeof ExpectationsSchema>;
  /** The extended failure policy document, for a Job that does not carry it as an annotation. */
  failurePolicy?: string;
  /**
   * "lean" (the default): the pods go as leanPods, what the shim sends: only what decisions
   * read, a third of the bytes and cheaper for the server to decode. A pod with a phase or
   * condition status the Kubernetes API does not define has no lean form; the request then
   * carries every pod in the full form. "full": the Kubernetes-shaped pods, always.
   */
  podEncoding?: "lean" | "full";
  /**
   * Make lean pods from the decoded Pods rather than from the JSON directly (the same result,
   * slower; for tests that compare the two routes).
   * @internal
   */
  viaPods?: boolean;
}

/** What {@link convert} returns: the request and what it left out. */
export interface Conversion {
  /** The request, ready for DecideJob. */
  request: DecideJobRequest;
  /**
   * The JSON paths of the fields kubectl printed that the contract lacks (decisions do not
   * read them), in document order: "job.spec.template.spec.containers[0].args",
   * "pods[1].status.podIP", ...
   */
  dropped: string[];
}

/**
 * A request that cannot be built from the JSON given: `field` is the path of the bad value in
 * the request, as the server names fields ("job.spec.backoffLimit", "pods[1].status.phase").
 */
export class RequestError extends TypeError {
  override name = "RequestError";
  /** The path of the bad value in the request. */
  readonly field: string;
  /** What is wrong with it. */
  readonly description: string;

  /** A bad value at `field`, for `description`. */
  constructor(field: string, description: string) {
    super(`${field}: ${description}`);
    this.field = field;
    this.description = description;
  }
}

/**
 * Builds a DecideJobRequest from what kubectl prints: `job` as `kubectl get job NAME -o json`
 * prints it, and `pods` as `kubectl get pods -l batch.kubernetes.io/controller-uid=UID -o json`
 * prints it (a PodList), or an array of pods. Fields the contract lacks are ignored;
 * timestamps stay RFC 3339 strings, which proto3 JSON reads as they are. The pods go as
 * leanPods unless `podEncoding` is "full". Use {@link convert} to learn which fields were
 * ignored. A value the contract cannot hold throws a {@link RequestError} naming its path.
 */
export function decideJobRequest(
  job: unknown,
  pods: unknown,
  options: ConvertOptions = {},
): DecideJobRequest {
  const jobMessage = decode(JobSchema, jobObject(job), "job");
  const items = podItems(pods);
  const failurePolicy = options.failurePolicy ?? "";
  const reads = podReadsOf(jobMessage, failurePolicy);
  let lean: LeanPod[] | undefined;
  let full: Pod[] = [];
  if (options.podEncoding !== "full" && options.viaPods !== true) {
    // kubectl's JSON straight to lean pods, the fast route; any pod it does not read plainly
    // sends the whole request down the decoding route below.
    lean = everyOrNone(items, (item) => leanPodFromJson(item, jobMessage, reads));
  }
  if (lean === undefined) {
    full = items.map((pod, i) => decode(PodSchema, asObject(pod, `pods[${i}]`), `pods[${i}]`));
  }
  if (lean === undefined && options.podEncoding !== "full") {
    lean = everyOrNone(full, (pod) => leanPodOf(pod, jobMessage, reads));
  }
  return create(DecideJobRequestSchema, {
    job: jobMessage,
    ...(lean === undefined ? { pods: full } : { leanPods: lean }),
    now: toTimestamp(options.now ?? new Date()),
    state: options.state,
    controllerName: options.controllerName ?? "",
    expectations: options.expectations,
    explain: options.explain ?? false,
    failurePolicy,
  });
}

/** Like {@link decideJobRequest}, and also says which fields it dropped. */
export function convert(
  job: unknown,
  pods: unknown,
  options: ConvertOptions = {},
): Conversion {
  const request = decideJobRequest(job, pods, options);
  const dropped: string[] = [];
  unknownFields(JobSchema, job as JsonValue, "job", dropped);
  podItems(pods).forEach((pod, i) => unknownFields(PodSchema, pod, `pods[${i}]`, dropped));
  return { request, dropped };
}

/**
 * Builds a ValidateJobRequest from `kubectl get job NAME -o json` output, ignoring the fields
 * the contract lacks.
 */
export function validateJobRequest(job: unknown): ValidateJobRequest {
  return create(ValidateJobRequestSchema, {
    job: decode(JobSchema, jobObject(job), "job"),
  });
}

/** The one Job object kubectl printed (not a JobList). */
function jobObject(job: unknown): JsonValue {
  const object = asObject(job, "job");
  if ("items" in (object as object)) {
    throw new RequestError("job", "expected one Job object (kubectl get job NAME -o json), not a list");
  }
  return object;
}

/** The pods of a PodList or List (its items), an array of pods, or one Pod. */
function podItems(pods: unknown): JsonValue[] {
  if (pods === undefined || pods === null) {
    return [];
  }
  if (Array.isArray(pods)) {
    return pods as JsonValue[];
  }
  if (typeof pods === "object") {
    const object = pods as { [key: string]: JsonValue };
    const items = object["items"];
    if (Array.isArray(items)) {
      return items;
    }
    if (object["kind"] === "Pod") {
      return [object];
    }
  }
  throw new RequestError("pods", "expected a PodList, a List of pods, an array of pods or a Pod");
}

function asObject(value: unknown, path: string): JsonValue {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RequestError(path, "expected a JSON object as kubectl prints it");
  }
  return value as JsonValue;
}

function toTimestamp(now: Date | Timestamp): Timestamp {
  return now instanceof Date ? timestampFromDate(now) : now;
}

/**
 * Appends to `out` the paths under `path` of the keys in `json` that `schema` has no field for
 * (by JSON name or proto name), descending into messages, lists and maps of messages; the
 * well-known types (Timestamp, Duration, ...) have their own JSON forms and are not descended.
 */
function unknownFields(schema: DescMessage, json: JsonValue, path: string, out: string[]): void {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    return;
  }
  for (const [key, value] of Object.entries(json)) {
    const field = schema.fields.find((f) => f.jsonName === key || f.name === key);
    const here = `${path}.${key}`;
    if (field === undefined) {
      out.push(here);
      continue;
    }
    if (value === null) {
      continue;
    }
    switch (field.fieldKind) {
      case "message":
        if (!isWellKnown(field.message)) {
          unknownFields(field.message, value, here, out);
        }
        break;
      case "list":
        if (field.listKind === "message" && !isWellKnown(field.message) && Array.isArray(value)) {
          value.forEach((item, i) => unknownFields(field.message, item, `${here}[${i}]`, out));
        }
        break;
      case "map":
        if (field.mapKind === "message" && !isWellKnown(field.message) && typeof value === "object" && !Array.isArray(value)) {
          for (const [mapKey, item] of Object.entries(value)) {
            unknownFields(field.message, item, `${here}[${mapKey}]`, out);
          }
        }
        break;
      default:
        break;
    }
  }
}

function isWellKnown(schema: DescMessage): boolean {
  return schema.typeName.startsWith("google.protobuf.");
}

/**
 * `json` read as `schema`'s message, ignoring the fields the contract lacks. When protobuf-es
 * cannot read it, the value it failed on is found by reading the fields one at a time,
 * descending into the one that fails, and named by its path under `path`.
 */
function decode<Desc extends DescMessage>(schema: Desc, json: JsonValue, path: string): MessageShape<Desc> {
  try {
    return fromJson(schema, json, { ignoreUnknownFields: true });
  } catch (error) {
    const bad = badValue(schema, json, path);
    throw new RequestError(bad?.path ?? path, `Invalid value: ${bad?.description ?? String(error)}`);
  }
}

function reads(schema: DescMessage, json: JsonValue): string | undefined {
  try {
    fromJson(schema, json, { ignoreUnknownFields: true });
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The deepest value under `path` that `schema` cannot read, and protobuf-es's reason. */
function badValue(schema: DescMessage, json: JsonValue, path: string): { path: string; description: string } | undefined {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    return { path, description: `${JSON.stringify(json)}: expected an object` };
  }
  for (const [key, value] of Object.entries(json)) {
    const field = schema.fields.find((f) => f.jsonName === key || f.name === key);
    const failure = field === undefined ? undefined : reads(schema, { [key]: value });
    if (field === undefined || failure === undefined) {
      continue;
    }
    const here = `${path}.${field.jsonName}`;
    const within = (message: DescMessage, item: JsonValue, at: string) =>
      isWellKnown(message) || reads(message, item) === undefined ? undefined : badValue(message, item, at);
    if (field.fieldKind === "message" && value !== null) {
      return within(field.message, value, here) ?? { path: here, description: `${JSON.stringify(value)}: ${failure}` };
    }
    if (field.fieldKind === "list" && Array.isArray(value)) {
      for (const [i, item] of value.entries()) {
        if (reads(schema, { [key]: [item] }) !== undefined) {
          const at = `${here}[${i}]`;
          const inner = field.listKind === "message" ? within(field.message, item, at) : undefined;
          return inner ?? { path: at, description: `${JSON.stringify(item)}: ${failure}` };
        }
      }
    }
    if (field.fieldKind === "map" && value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const [k, item] of Object.entries(value)) {
        if (reads(schema, { [key]: { [k]: item } }) !== undefined) {
          const at = `${here}[${k}]`;
          const inner = field.mapKind === "message" ? within(field.message, item, at) : undefined;
          return inner ?? { path: at, description: `${JSON.stringify(item)}: ${failure}` };
        }
      }
    }
    return { path: here, description: `${JSON.stringify(value)}: ${failure}` };
  }
  return undefined;
}

/** `f` of every item, or undefined as soon as one has none (a pod without a lean form). */
function everyOrNone<T, U>(items: readonly T[], f: (item: T) => U | undefined): U[] | undefined {
  const out: U[] = [];
  for (const item of items) {
    const u = f(item);
    if (u === undefined) {
      return undefined;
    }
    out.push(u);
  }
  return out;
}
