# Every input of the deployment. README.md here lists them too, and a test keeps the
# two lists equal.

variable "aws_region" {
  description = "AWS region to deploy to, e.g. eu-west-1."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.aws_region))
    error_message = "aws_region must be a region name such as eu-west-1."
  }
}

variable "name" {
  description = "Name of this deployment: prefixes every resource and the SSM parameters (/<name>/...)."
  type        = string
  default     = "arena"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "repository_url" {
  description = "Git URL every machine clones Arena from at first boot (https, readable without credentials)."
  type        = string

  validation {
    condition     = can(regex("^https://[A-Za-z0-9._~:/@%+-]+$", var.repository_url))
    error_message = "repository_url must be an https URL: the machines open only ports 80 and 443 outwards by default."
  }
}

variable "repository_ref" {
  description = "Branch, tag or commit the machines check out at first boot."
  type        = string
  default     = "main"

  validation {
    condition     = can(regex("^[A-Za-z0-9._/-]+$", var.repository_ref))
    error_message = "repository_ref must be a branch, tag or commit name."
  }
}

variable "domain_name" {
  description = "Host name the site is served under (point its DNS A record at the control_public_ip output); empty: the public address only."
  type        = string
  default     = ""

  validation {
    condition     = var.domain_name == "" || can(regex("^([a-z0-9]([a-z0-9-]*[a-z0-9])?\\.)+[a-z]{2,}$", var.domain_name))
    error_message = "domain_name must be empty or a lowercase host name such as arena.example.org."
  }
}

variable "vpc_cidr" {
  description = "Address range of the VPC, /16 to /23; the control machine's subnet is its first /24, the workers' the second."
  type        = string
  default     = "10.42.0.0/16"

  validation {
    condition     = can(cidrnetmask(var.vpc_cidr)) && try(tonumber(split("/", var.vpc_cidr)[1]) >= 16 && tonumber(split("/", var.vpc_cidr)[1]) <= 23, false)
    error_message = "vpc_cidr must be an IPv4 range from /16 to /23, e.g. 10.42.0.0/16."
  }
}

variable "availability_zone" {
  description = "Availability zone of every machine (one zone: no cross-zone traffic between workers and the control machine); empty: <aws_region>a."
  type        = string
  default     = ""

  validation {
    condition     = var.availability_zone == "" || startswith(var.availability_zone, var.aws_region)
    error_message = "availability_zone must be empty or a zone of aws_region, e.g. eu-west-1b."
  }
}

variable "ami_id" {
  description = "AMI of every machine; empty: the newest official Debian 12 (bookworm) amd64 image. Must be Debian 12 or a derivative on x86_64."
  type        = string
  default     = ""

  validation {
    condition     = var.ami_id == "" || can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must be empty or an AMI id (ami-...)."
  }
}

variable "control_instance_type" {
  description = "Instance type of the control machine (nginx, web, gateway, PostgreSQL, Redis, beat, the tournament manager, the watchdog and its own workers); x86_64."
  type        = string
  default     = "t3.large"
}

variable "worker_instance_type" {
  description = "Instance type of each worker machine (builds and duels); x86_64. A fixed-performance type keeps move deadlines fair."
  type        = string
  default     = "c6i.large"
}

variable "worker_count" {
  description = "Number of worker machines that join the control machine's queues; 0: the control machine does all the work."
  type        = number
  default     = 1

  validation {
    condition     = var.worker_count >= 0 && var.worker_count <= 100 && floor(var.worker_count) == var.worker_count
    error_message = "worker_count must be a whole number from 0 to 100."
  }
}

variable "control_volume_gb" {
  description = "Size of the control machine's encrypted root volume in GiB: the database, uploads, replays and images live there."
  type        = number
  default     = 100

  validation {
    condition     = var.control_volume_gb >= 30
    error_message = "control_volume_gb must be at least 30: the images alone take several GiB."
  }
}

variable "worker_volume_gb" {
  description = "Size of each worker machine's encrypted root volume in GiB: images and builds."
  type        = number
  default     = 50

  validation {
    condition     = var.worker_volume_gb >= 30
    error_message = "worker_volume_gb must be at least 30: the images alone take several GiB."
  }
}

variable "ssh_cidr" {
  description = "Address range allowed to reach the control machine on port 22; empty: SSH closed. Workers accept SSH from the control machine only."
  type        = string
  default     = ""

  validation {
    condition     = var.ssh_cidr == "" || (can(cidrhost(var.ssh_cidr, 0)) && !endswith(var.ssh_cidr, "/0"))
    error_message = "ssh_cidr must be empty or an IPv4 range narrower than the whole internet, e.g. 203.0.113.7/32."
  }
}

variable "ssh_public_key" {
  description = "OpenSSH public key installed for the admin user (\"admin\" on Debian) of every machine; empty: no key pair."
  type        = string
  default     = ""
}

variable "egress_ports" {
  description = "TCP ports the machines may open outwards to any address: 80 and 443 (Debian packages, git, Python wheels); add e.g. 587 for e-mail or an LLM server's port."
  type        = list(number)
  default     = [80, 443]

  validation {
    condition     = alltrue([for port in var.egress_ports : port >= 1 && port <= 65535 && floor(port) == port])
    error_message = "egress_ports must be TCP port numbers (1 to 65535)."
  }
}

variable "settings" {
  description = "Further Arena settings (docs/operators/settings.md) written to every machine's .env, e.g. ARENA_FROM_EMAIL; never secrets (they would sit in the user data)."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for key in keys(var.settings) : can(regex("^[A-Z][A-Z0-9_]*$", key))])
    error_message = "settings keys must be environment variable names (A-Z, 0-9, _)."
  }

  validation {
    condition = length(setintersection(keys(var.settings), [
      "ARENA_SECRET_KEY", "ARENA_SECRETS_KEY", "POSTGRES_PASSWORD", "REDIS_PASSWORD",
      "DATABASE_URL", "ARENA_BROKER_URL", "ARENA_ONLINE_BUS_URL",
    ])) == 0
    error_message = "settings must not set the secrets or the URLs holding them: the machines build those from SSM Parameter Store."
  }

  validation {
    condition = length(setintersection(keys(var.settings), [
      "DOCKER_GID", "ARENA_PRIVATE_ADDRESS", "ARENA_HTTP_PORT", "ARENA_HTTPS_PORT", "COMPOSE_FILE",
    ])) == 0
    error_message = "settings must not set DOCKER_GID, ARENA_PRIVATE_ADDRESS, ARENA_HTTP_PORT, ARENA_HTTPS_PORT or COMPOSE_FILE: the machines and the firewall depend on their values."
  }
}

variable "log_retention_days" {
  description = "Days the VPC flow logs are kept in CloudWatch Logs."
  type        = number
  default     = 365

  validation {
    condition = contains([
      1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
      2922, 3288, 3653,
    ], var.log_retention_days)
    error_message = "log_retention_days must be a retention CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, ..., 365, ..., 3653)."
  }
}

variable "tags" {
  description = "Tags added to every resource, besides Project = arena and Deployment = <name>."
  type        = map(string)
  default     = {}
}
