"""Kubernetes manifests for running llmserve behind the field's routers (docker/k8s/
inference-extension: the Gateway API Inference Extension's InferencePool, endpoint picker and
HTTPRoute; docker/k8s/smg: smg with service discovery), checked offline: core kinds against the
Kubernetes API schemas (kubernetes-validate), the Inference Extension and Gateway API kinds
against JSON schemas written from their v1 API references, and every cross-reference (labels,
ports, names, config file) against the llmserve Deployment."""
import copy

import pytest
import yaml

from deploy_support import K8S, deployment_container, k8s_docs, load_yaml, registered_routes

K8S_API_VERSION = "1.32.0"
CORE_KINDS = {"Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "ConfigMap"}


def strict(properties, required=()):
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


NAME = {"type": "string", "minLength": 1, "maxLength": 253}
PORT = strict({"number": {"type": "integer", "minimum": 1, "maximum": 65535}}, ["number"])
METADATA = {"type": "object", "required": ["name"]}

# inference.networking.k8s.io/v1 InferencePool (Gateway API Inference Extension v1.0).
INFERENCE_POOL = strict({
    "apiVersion": {"const": "inference.networking.k8s.io/v1"},
    "kind": {"const": "InferencePool"},
    "metadata": METADATA,
    "spec": strict({
        "selector": strict({"matchLabels": {"type": "object", "minProperties": 1,
                                            "additionalProperties": {"type": "string"}}},
                           ["matchLabels"]),
        "targetPorts": {"type": "array", "minItems": 1, "maxItems": 8, "items": PORT},
        "endpointPickerRef": strict({
            "group": {"type": "string"}, "kind": {"type": "string"}, "name": NAME,
            "port": PORT, "failureMode": {"enum": ["FailOpen", "FailClose"]}}, ["name"]),
    }, ["selector", "targetPorts", "endpointPickerRef"]),
}, ["apiVersion", "kind", "metadata", "spec"])

# gateway.networking.k8s.io/v1 HTTPRoute, the fields these manifests use.
BACKEND_REF = strict({"group": {"type": "string"}, "kind": {"type": "string"}, "name": NAME,
                      "namespace": {"type": "string"}, "port": {"type": "integer"},
                      "weight": {"type": "integer"}}, ["name"])
HTTP_ROUTE = strict({
    "apiVersion": {"const": "gateway.networking.k8s.io/v1"},
    "kind": {"const": "HTTPRoute"},
    "metadata": METADATA,
    "spec": strict({
        "parentRefs": {"type": "array", "minItems": 1, "items": strict({
            "group": {"type": "string"}, "kind": {"type": "string"}, "name": NAME,
            "namespace": {"type": "string"}, "sectionName": {"type": "string"}}, ["name"])},
        "hostnames": {"type": "array", "items": {"type": "string"}},
        "rules": {"type": "array", "minItems": 1, "items": strict({
            "matches": {"type": "array", "items": strict({
                "path": strict({"type": {"enum": ["Exact", "PathPrefix",
                                                  "RegularExpression"]},
                                "value": {"type": "string"}}),
                "headers": {"type": "array"}, "method": {"type": "string"}})},
            "backendRefs": {"type": "array", "minItems": 1, "items": BACKEND_REF},
            "timeouts": strict({"request": {"type": "string"},
                                "backendRequest": {"type": "string"}}),
        }, ["backendRefs"])},
    }, ["parentRefs", "rules"]),
}, ["apiVersion", "kind", "metadata", "spec"])

# The endpoint picker's configuration file (inference.networking.x-k8s.io/v1alpha1).
EPP_PLUGINS = {"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer",
               "lora-affinity-scorer", "max-score-picker", "random-picker",
               "weighted-random-picker", "single-profile-handler", "low-queue-filter",
               "least-queue-filter", "least-kv-cache-filter", "decision-tree-filter"}
EPP_CONFIG = strict({
    "apiVersion": {"const": "inference.networking.x-k8s.io/v1alpha1"},
    "kind": {"const": "EndpointPickerConfig"},
    "plugins": {"type": "array", "minItems": 1, "items": strict({
        "type": {"enum": sorted(EPP_PLUGINS)}, "name": {"type": "string"},
        "parameters": {"type": "object"}}, ["type"])},
    "schedulingProfiles": {"type": "array", "minItems": 1, "items": strict({
        "name": NAME, "plugins": {"type": "array", "minItems": 1, "items": strict({
            "pluginRef": NAME, "weight": {"type": "integer", "minimum": 0}}, ["pluginRef"])}},
        ["name", "plugins"])},
}, ["apiVersion", "kind", "plugins", "schedulingProfiles"])

SCHEMAS = {"InferencePool": INFERENCE_POOL, "HTTPRoute": HTTP_ROUTE}


def overlay(name):
    """(kind, name) -> manifest over the resources an overlay's kustomization lists."""
    d = K8S / name
    docs = {}
    for res in load_yaml(d / "kustomization.yaml")["resources"]:
        for doc in yaml.safe_load_all((d / res).read_text()):
            if doc:
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    return docs


def validate(doc):
    kind = doc["kind"]
    if kind in CORE_KINDS:
        kv = pytest.importorskip("kubernetes_validate")
        kv.validate(doc, K8S_API_VERSION, strict=True)
    else:
        import jsonschema
        jsonschema.validate(doc, SCHEMAS[kind])


def llmserve_pod_labels():
    return k8s_docs()["Deployment"]["spec"]["template"]["metadata"]["labels"]


def llmserve_http_port():
    return {p["name"]: p["containerPort"] for p in deployment_container()["ports"]}["http"]


def only(docs, kind):
    (doc,) = [d for (k, _), d in docs.items() if k == kind]
    return doc


@pytest.mark.parametrize("name", ["inference-extension", "smg"])
def test_router_manifests_match_their_schemas(name):
    docs = overlay(name)
    assert docs
    for (kind, n), doc in docs.items():
        try:
            validate(doc)
        except Exception as e:  # noqa: BLE001 (the validators' own error types)
            pytest.fail(f"{name}/{kind} {n}: {getattr(e, 'message', e)}")


@pytest.mark.parametrize("typo", ["pool selector", "pool port", "picker ref", "route backend"])
def test_schemas_catch_a_misspelt_field(typo):
    import jsonschema
    docs = overlay("inference-extension")
    pool = copy.deepcopy(only(docs, "InferencePool"))
    route = copy.deepcopy(only(docs, "HTTPRoute"))
    if typo == "pool selector":
        pool["spec"]["selector"]["matchLabel"] = pool["spec"]["selector"].pop("matchLabels")
    elif typo == "pool port":
        pool["spec"]["targetPorts"][0]["port"] = pool["spec"]["targetPorts"][0].pop("number")
    elif typo == "picker ref":
        pool["spec"]["extensionRef"] = pool["spec"].pop("endpointPickerRef")
    else:
        route["spec"]["rules"][0]["backendRef"] = route["spec"]["rules"][0].pop("backendRefs")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(pool, INFERENCE_POOL)
        jsonschema.validate(route, HTTP_ROUTE)


def test_inference_pool_selects_the_llmserve_pods_and_names_the_picker():
    docs = overlay("inference-extension")
    pool = only(docs, "InferencePool")
    assert pool["spec"]["selector"]["matchLabels"].items() <= llmserve_pod_labels().items()
    assert [p["number"] for p in pool["spec"]["targetPorts"]] == [llmserve_http_port()]
    ref = pool["spec"]["endpointPickerRef"]
    svc = docs[("Service", ref["name"])]
    assert ref["port"]["number"] in {p["port"] for p in svc["spec"]["ports"]}
    epp = docs[("Deployment", ref["name"])]
    pod = epp["spec"]["template"]
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (c,) = pod["spec"]["containers"]
    args = c["args"]
    assert args[args.index("--pool-name") + 1] == pool["metadata"]["name"]
    assert int(args[args.index("--grpc-port") + 1]) == ref["port"]["number"]
    route = only(docs, "HTTPRoute")
    (backend,) = route["spec"]["rules"][0]["backendRefs"]
    assert (backend["group"], backend["kind"], backend["name"]) == \
        ("inference.networking.k8s.io", "InferencePool", pool["metadata"]["name"])
    # The picker's config file is the ConfigMap key mounted where --config-file points.
    path = args[args.index("--config-file") + 1]
    (mount,) = [m for m in c["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    (vol,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    cm = docs[("ConfigMap", vol["configMap"]["name"])]
    config = yaml.safe_load(cm["data"][path[len(mount["mountPath"]) + 1:]])
    import jsonschema
    jsonschema.validate(config, EPP_CONFIG)
    declared = {p.get("name", p["type"]) for p in config["plugins"]}
    for profile in config["schedulingProfiles"]:
        assert {p["pluginRef"] for p in profile["plugins"]} <= declared
    sa = pod["spec"]["serviceAccountName"]
    binding = docs[("RoleBinding", sa)]
    assert binding["subjects"][0]["name"] == sa
    rules = docs[("Role", binding["roleRef"]["name"])]["rules"]
    assert any("pods" in r["resources"] and "watch" in r["verbs"] for r in rules)
    assert any("inferencepools" in r["resources"] for r in rules)


def test_smg_discovers_the_llmserve_pods_on_their_http_port():
    docs = overlay("smg")
    dep = only(docs, "Deployment")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    args = c["args"]
    assert "--service-discovery" in args
    selector = dict(kv.split("=", 1) for kv in args[args.index("--selector") + 1].split())
    assert selector.items() <= llmserve_pod_labels().items()
    assert int(args[args.index("--service-discovery-port") + 1]) == llmserve_http_port()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert int(args[args.index("--port") + 1]) == ports["http"]
    svc = only(docs, "Service")
    assert {p["targetPort"] for p in svc["spec"]["ports"]} <= set(ports)
    sa = dep["spec"]["template"]["spec"]["serviceAccountName"]
    rules = docs[("Role", docs[("RoleBinding", sa)]["roleRef"]["name"])]["rules"]
    assert any("pods" in r["resources"] and {"list", "watch"} <= set(r["verbs"]) for r in rules)


def test_llmserve_serves_what_the_routers_call():
    """The routes the pickers and routers call on a worker exist in server/http."""
    assert {"/metrics", "/health", "/v1/models", "/v1/completions/render",
            "/v1/chat/completions/render", "/tokenizer_info"} <= registered_routes()
