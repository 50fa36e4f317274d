# The machines: one control machine (docker-compose.yml) and worker_count workers
# (docker-compose.worker.yml), all Debian 12 booted by the same cloud-init template.
#
# Terraform provisions; it does not upgrade. A new Debian image or a changed boot
# configuration never replaces a running machine (modules/machine ignores them): the
# control machine holds the database on its root volume, and upgrades happen on the
# machines (docs/operators/worker-hosts.md). New workers boot at repository_ref, so keep
# it at the version the control machine runs.

data "aws_ami" "debian" {
  count       = var.ami_id == "" ? 1 : 0
  most_recent = true
  owners      = ["136693071363"] # Debian's own account: the official cloud images

  filter {
    name   = "name"
    values = ["debian-12-amd64-*"]
  }

  filter {
    name   = "architecture"
    values = ["x86_64"]
  }
}

locals {
  ami_id = var.ami_id != "" ? var.ami_id : data.aws_ami.debian[0].id

  # Each kind of machine's compose files (docs/operators/compose.md): the control machine
  # also publishes PostgreSQL and Redis on its private address for the workers.
  compose_files = {
    control = ["docker-compose.yml", "docker-compose.control.yml"]
    worker  = ["docker-compose.worker.yml"]
  }

  # The settings of each machine's .env, none secret: the secrets are files in the
  # checkout's secrets/ folder, written at boot from SSM Parameter Store, and arena-boot
  # adds DOCKER_GID, the docker group's id on the machine. COMPOSE_FILE makes a plain
  # `docker-compose ps` or `logs` on a machine see its own services.
  common_settings = {
    ARENA_DEBUG     = "0"
    ARENA_SANDBOX   = "docker"
    ARENA_HOST_DATA = "/var/lib/arena"
  }
  control_settings = merge(local.common_settings, {
    ARENA_ALLOWED_HOSTS   = join(",", compact([var.domain_name, aws_eip.control.public_ip]))
    ARENA_PRIVATE_ADDRESS = local.control_private_ip
    ARENA_HTTP_PORT       = "80"
    ARENA_HTTPS_PORT      = "443"
    COMPOSE_FILE          = join(":", local.compose_files.control)
  }, var.settings)
  worker_settings = merge(local.common_settings, {
    COMPOSE_FILE = join(":", local.compose_files.worker)
  }, var.settings)

  # What files/arena-boot.sh needs besides the settings: where the code and the secrets
  # are, and on a worker the control machine's address, which make_secrets.sh puts in
  # the URLs of PostgreSQL and Redis (on the control machine they name compose's services).
  control_boot = {
    ARENA_REPOSITORY       = var.repository_url
    ARENA_REF              = var.repository_ref
    ARENA_REGION           = var.aws_region
    ARENA_PARAMETER_PREFIX = local.parameter_prefix
  }
  worker_boot = merge(local.control_boot, {
    CONTROL_HOST = local.control_private_ip
  })

  # Env files go into the cloud-init template as JSON strings, which YAML reads as quoted
  # scalars; the boot script as base64. No secret goes in.
  env_files = {
    for name, entries in {
      control_boot     = local.control_boot
      control_settings = local.control_settings
      worker_boot      = local.worker_boot
      worker_settings  = local.worker_settings
    } : name => jsonencode(join("", [for key in sort(keys(entries)) : "${key}=${entries[key]}\n"]))
  }
  boot_script = base64encode(file("${path.module}/files/arena-boot.sh"))

  # The variables of templates/cloud-init.yaml.tftpl for each kind of machine.
  control_cloud_init = {
    role            = "control"
    compose_options = join(" ", formatlist("-f %s", local.compose_files.control))
    boot_env        = local.env_files.control_boot
    settings_env    = local.env_files.control_settings
    boot_script     = local.boot_script
  }
  worker_cloud_init = {
    role            = "worker"
    compose_options = join(" ", formatlist("-f %s", local.compose_files.worker))
    boot_env        = local.env_files.worker_boot
    settings_env    = local.env_files.worker_settings
    boot_script     = local.boot_script
  }
}

resource "aws_key_pair" "admin" {
  count      = var.ssh_public_key != "" ? 1 : 0
  key_name   = "${var.name}-admin"
  public_key = var.ssh_public_key
}

# Each kind of machine is a call of modules/machine, which holds what they share.
locals {
  deployment = {
    ami_id           = local.ami_id
    instance_profile = aws_iam_instance_profile.host.name
    key_name         = one(aws_key_pair.admin[*].key_name)
    kms_key_arn      = aws_kms_key.arena.arn
  }
}

module "control" {
  source = "./modules/machine"
  names  = ["${var.name}-control"]
  machine = {
    instance_type     = var.control_instance_type
    subnet_id         = aws_subnet.arena["control"].id
    security_group_id = aws_security_group.control.id
    volume_gb         = var.control_volume_gb
    user_data         = templatefile("${path.module}/templates/cloud-init.yaml.tftpl", local.control_cloud_init)
    private_ip        = local.control_private_ip
  }
  deployment = local.deployment

  # The machine reads its secrets as soon as it boots.
  depends_on = [aws_iam_role_policy.host_secrets]
}

resource "aws_eip" "control" {
  domain = "vpc"

  tags = { Name = "${var.name}-control" }
}

resource "aws_eip_association" "control" {
  instance_id   = module.control.ids[0]
  allocation_id = aws_eip.control.id
}

module "worker" {
  source = "./modules/machine"
  names  = [for number in range(1, var.worker_count + 1) : "${var.name}-worker-${number}"]
  machine = {
    instance_type     = var.worker_instance_type
    subnet_id         = aws_subnet.arena["workers"].id
    security_group_id = aws_security_group.workers.id
    volume_gb         = var.worker_volume_gb
    user_data         = templatefile("${path.module}/templates/cloud-init.yaml.tftpl", local.worker_cloud_init)
  }
  deployment = local.deployment

  # A worker downloads packages and the repository through the NAT gateway at boot.
  depends_on = [aws_iam_role_policy.host_secrets, aws_route.workers_outbound]
}

# The machines were two resources of this file before: existing deployments keep theirs.
moved {
  from = aws_instance.control
  to   = module.control.aws_instance.machine[0]
}

moved {
  from = aws_instance.worker
  to   = module.worker.aws_instance.machine
}
