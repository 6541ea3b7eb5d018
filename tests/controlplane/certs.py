"""A throwaway certificate authority for the loopback control plane.

Why our own CA instead of letting kube-apiserver self-sign: clients (kubectl, the
Python client, kube-scheduler) then verify the server properly, and the same CA
signs the admin client certificate (``O=system:masters``), so no authentication
shortcut is needed. Keys are ECDSA P-256: fast to generate, accepted everywhere.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=7)


@dataclass(frozen=True)
class KeyPair:
    """PEM-encoded certificate and private key, plus where they were written."""

    cert_pem: bytes
    key_pem: bytes
    cert_file: Path
    key_file: Path


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> KeyPair:
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = _key_pem(key)
    cert_file = directory / f"{stem}.crt"
    key_file = directory / f"{stem}.key"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    key_file.chmod(0o600)
    return KeyPair(cert_pem, key_pem, cert_file, key_file)


class TinyCA:
    """A self-signed CA that issues serving and client certificates into one directory."""

    def __init__(self, directory: Path, name: str = "policyscheduler-test-ca") -> None:
        self.directory = directory
        self._key = _new_key()
        now = dt.datetime.now(dt.UTC)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True,
                    content_commitment=False, key_encipherment=False, data_encipherment=False,
                    key_agreement=False, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self._name = subject
        self.pair = _write(directory, "ca", cert, self._key)

    def _issue(self, stem: str, subject: x509.Name, usage: x509.ObjectIdentifier,
               sans: list[x509.GeneralName] | None = None) -> KeyPair:
        key = _new_key()
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return _write(self.directory, stem, builder.sign(self._key, hashes.SHA256()), key)

    def serving(self, stem: str, host: str = "127.0.0.1") -> KeyPair:
        """A TLS server certificate valid for the loopback address and ``localhost``."""
        sans: list[x509.GeneralName] = [
            x509.IPAddress(ipaddress.ip_address(host)),
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes.default.svc"),
        ]
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, stem)])
        return self._issue(stem, subject, ExtendedKeyUsageOID.SERVER_AUTH, sans)

    def client(self, stem: str, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate: the apiserver maps CN to the user and each O to a group."""
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        return self._issue(stem, x509.Name(attrs), ExtendedKeyUsageOID.CLIENT_AUTH)


def service_account_keys(directory: Path) -> tuple[Path, Path]:
    """A key pair for service-account tokens: (private key to sign, public key to verify).

    The private key is written in SEC1 ("EC PRIVATE KEY") form, which is what
    kube-apiserver's key loaders accept.
    """
    key = _new_key()
    private = directory / "sa.key"
    public = directory / "sa.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public
