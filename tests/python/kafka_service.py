"""The Kafka-protocol broker the distributed tests use (scripts/services/kafka.sh exports its
address and, for tests that start a broker of their own, the tansu binary)."""

from services import service_env


def bootstrap() -> str:
    return service_env("LUCILLE_TEST_KAFKA_BOOTSTRAP", "kafka.sh")


def tansu() -> str:
    return service_env("LUCILLE_TEST_TANSU", "kafka.sh")
