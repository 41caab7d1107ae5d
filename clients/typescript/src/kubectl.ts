import { create, fromJson, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  DecideJobRequestSchema,
  ValidateJobRequestSchema,
  type DecideJobRequest,
  type ValidateJobRequest,
} from "./gen/jobdecider/v1/job_decider_pb.js";
import { JobSchema, PodSchema } from "./gen/jobdecider/v1/kubernetes_pb.js";

/** Options of {@link decideJobRequest} and {@link convert}. */
export interface ConvertOptions {
  /** The decision's time; the current time when absent (the server never reads a clock). */
  now?: Date | Timestamp;
  /** The controller to decide for (a spec.managedBy value); empty means the built-in one. */
  controllerName?: string;
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
 * Builds a DecideJobRequest from what kubectl prints: `job` as `kubectl get job NAME -o json`
 * prints it, and `pods` as `kubectl get pods -l batch.kubernetes.io/controller-uid=UID -o json`
 * prints it (a PodList), or an array of pods. Fields the contract lacks are ignored;
 * timestamps stay RFC 3339 strings, which proto3 JSON reads as they are. Use
 * {@link convert} to learn which fields were ignored.
 */
export function decideJobRequest(
  job: unknown,
  pods: unknown,
  options: ConvertOptions = {},
): DecideJobRequest {
  return create(DecideJobRequestSchema, {
    job: fromJson(JobSchema, jobObject(job), { ignoreUnknownFields: true }),
    pods: podItems(pods).map(
      (pod, i) => fromJson(PodSchema, asObject(pod, `pods[${i}]`), { ignoreUnknownFields: true }),
    ),
    now: toTimestamp(options.now ?? new Date()),
    controllerName: options.controllerName ?? "",
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
    job: fromJson(JobSchema, jobObject(job), { ignoreUnknownFields: true }),
  });
}

/** The one Job object kubectl printed (not a JobList). */
function jobObject(job: unknown): JsonValue {
  const object = asObject(job, "job");
  if ("items" in (object as object)) {
    throw new TypeError("job: expected one Job object (kubectl get job NAME -o json), not a list");
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
  throw new TypeError("pods: expected a PodList, a List of pods, an array of pods or a Pod");
}

function asObject(value: unknown, path: string): JsonValue {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${path}: expected a JSON object as kubectl prints it`);
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
