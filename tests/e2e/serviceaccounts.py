#!/usr/bin/python3
"""ServiceAccount tokens seen by a client library and by a relying party.

Usage: serviceaccounts.py KUBECONFIG DATA_DIR NAMESPACE TOKEN

With Debian's python3-kubernetes (a real client): the admin mints a TokenRequest; that
token and the one kubectl made (TOKEN) each read the namespace's ServiceAccounts as the
account. As an OpenID relying party would, the token's signature is verified with the key
/openid/v1/jwks publishes. With kapi's own key (DATA_DIR/sa.key), a token of valid claims
authenticates and the same claims expired do not. Prints PASS/FAIL lines.
"""
import base64
import json
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from kubernetes import client, config
from kubernetes.client.rest import ApiException

failed = 0


def check(name, ok, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + str(detail)))
    failed += 0 if ok else 1


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def public_key(jwk):
    """The key a JWK (RSA or EC P-256) describes."""
    num = lambda m: int.from_bytes(b64d(jwk[m]), "big")
    if jwk["kty"] == "RSA":
        return rsa.RSAPublicNumbers(num("e"), num("n")).public_key()
    return ec.EllipticCurvePublicNumbers(num("x"), num("y"), ec.SECP256R1()).public_key()


def verify(pub, sig, data):
    """Checks a JWS signature (RS256, or ES256 as r||s) over data."""
    if isinstance(pub, rsa.RSAPublicKey):
        pub.verify(sig, data, padding.PKCS1v15(), hashes.SHA256())
    else:
        half = len(sig) // 2
        der = encode_dss_signature(int.from_bytes(sig[:half], "big"), int.from_bytes(sig[half:], "big"))
        pub.verify(der, data, ec.ECDSA(hashes.SHA256()))


def sign(key, data):
    """A JWS signature over data with key (RSA: RS256, EC: ES256 as r||s)."""
    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def as_bearer(admin_cfg, token):
    """An API client that authenticates with token only."""
    c = client.Configuration()
    c.host = admin_cfg.host
    c.ssl_ca_cert = admin_cfg.ssl_ca_cert
    c.api_key = {"authorization": "Bearer " + token}
    return client.CoreV1Api(client.ApiClient(c))


def reads_accounts(admin_cfg, ns, token):
    try:
        names = [sa.metadata.name for sa in as_bearer(admin_cfg, token).list_namespaced_service_account(ns).items]
        return "robot" in names, names
    except ApiException as e:
        return False, e.status


def main():
    kubeconfig, data, ns, kubectl_token = sys.argv[1:5]
    config.load_kube_config(config_file=kubeconfig)
    admin_cfg = client.Configuration.get_default_copy()
    core = client.CoreV1Api()

    tr = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=1200))
    out = core.create_namespaced_service_account_token("robot", ns, tr)
    check("python: TokenRequest answered", out.status.token.startswith("eyJ") and out.spec.expiration_seconds == 1200,
          out.spec)
    ok, what = reads_accounts(admin_cfg, ns, out.status.token)
    check("python: the token it minted lists the ServiceAccounts", ok, what)
    ok, what = reads_accounts(admin_cfg, ns, kubectl_token)
    check("python: kubectl's token lists the ServiceAccounts", ok, what)
    ok, what = reads_accounts(admin_cfg, ns, kubectl_token[:-4] + "AAAA")
    check("python: a token with another signature is 401", not ok and what == 401, what)

    # A relying party: the key of the token's kid, from the JWKS, verifies its signature.
    api = client.ApiClient()
    jwks = json.loads(api.call_api("/openid/v1/jwks", "GET", auth_settings=["BearerToken"],
                                   _preload_content=False)[0].data)
    head, payload, sig = out.status.token.split(".")
    kid = json.loads(b64d(head))["kid"]
    jwk = [k for k in jwks["keys"] if k["kid"] == kid]
    check("jwks: the token's kid is published", len(jwk) == 1, jwks)
    if jwk:
        try:
            verify(public_key(jwk[0]), b64d(sig), (head + "." + payload).encode())
            check("jwks: the published key verifies the token", True)
        except Exception as e:  # InvalidSignature
            check("jwks: the published key verifies the token", False, e)

    # Tokens made here with kapi's own key: the same claims, valid and then expired.
    key = serialization.load_pem_private_key(open(data + "/sa.key", "rb").read(), None)
    claims = json.loads(b64d(payload))
    now = int(time.time())

    alg = json.loads(b64d(head))["alg"]

    def signed(c):
        h = b64e(json.dumps({"alg": alg, "kid": kid}).encode())
        p = b64e(json.dumps(c).encode())
        return h + "." + p + "." + b64e(sign(key, (h + "." + p).encode()))

    claims.update(iat=now, nbf=now, exp=now + 600)
    ok, what = reads_accounts(admin_cfg, ns, signed(claims))
    check("a token signed with sa.key authenticates", ok, what)
    claims.update(iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    ok, what = reads_accounts(admin_cfg, ns, signed(claims))
    check("the same token expired is 401", not ok and what == 401, what)
    claims.update(iat=now, nbf=now, exp=now + 600, iss="https://elsewhere.example.com")
    ok, what = reads_accounts(admin_cfg, ns, signed(claims))
    check("the same token from another issuer is 401", not ok and what == 401, what)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
