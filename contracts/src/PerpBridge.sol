// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/**
 * @notice What both perp deposit bridges share: tokens come in, stay locked here, and a relayer
 * credits them on the core ledger (another chain) under the deposit's `coreHash`:
 *
 *   coreHash = keccak256(abi.encode(uint256 chainId, address bridge, address depositor, uint256 nonce))
 *
 * where `nonce` is `nonces(depositor)` before the deposit (0, 1, 2, ... per depositor and bridge), so
 * a transaction builder knows the hash before the deposit is mined. The depositor is always the
 * sender: the core side credits the account that paid (a subaccount's Safe when it deposits
 * through its module), so a deposit has no recipient argument.
 *
 * A deposit below `minimumDepositOf(token)` is accepted here but rejected on the core side: the
 * tokens are lost (as with Hyperliquid's Bridge2).
 */
abstract contract PerpBridgeBase {
    using SafeERC20 for IERC20;

    uint8 public constant DESTINATION_PERP = 0;
    uint8 public constant DESTINATION_SPOT = 1;

    event Deposited(
        bytes32 indexed coreHash,
        address indexed depositor,
        address indexed token,
        uint256 amount,
        uint8 destination,
        uint256 nonce
    );

    error ZeroAmount();
    error TokenNotSupported(address token);
    error InvalidDestination(uint8 destination);

    mapping(address depositor => uint256) public nonces;

    /// @notice The core hash of `depositor`'s deposit number `nonce` on this bridge and chain.
    function coreHashOf(address depositor, uint256 nonce) public view returns (bytes32) {
        return keccak256(abi.encode(block.chainid, address(this), depositor, nonce));
    }

    /// @notice The core hash `depositor`'s next deposit will get.
    function nextCoreHash(address depositor) external view returns (bytes32) {
        return coreHashOf(depositor, nonces[depositor]);
    }

    /// @notice Below this the core side rejects a deposit (0: token not supported).
    function minimumDepositOf(address token) public view virtual returns (uint256);

    function _deposit(address token, uint256 amount, uint8 destination) internal returns (bytes32 coreHash) {
        if (amount == 0) revert ZeroAmount();
        if (minimumDepositOf(token) == 0) revert TokenNotSupported(token);
        if (destination > DESTINATION_SPOT) revert InvalidDestination(destination);
        uint256 nonce = nonces[msg.sender]++;
        coreHash = coreHashOf(msg.sender, nonce);
        IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        emit Deposited(coreHash, msg.sender, token, amount, destination, nonce);
    }
}

/// @notice Like Hyperliquid's Bridge2: USDC only, to the perp account, with a minimum below which
/// the deposit is lost.
contract PerpBridgeA is PerpBridgeBase {
    address public immutable usdc;
    uint256 public immutable minimumDeposit;

    constructor(address usdc_, uint256 minimumDeposit_) {
        require(usdc_ != address(0) && minimumDeposit_ > 0, "PerpBridgeA: config");
        usdc = usdc_;
        minimumDeposit = minimumDeposit_;
    }

    function minimumDepositOf(address token) public view override returns (uint256) {
        return token == usdc ? minimumDeposit : 0;
    }

    /// @notice Deposits `amount` USDC (approved to this bridge) to the sender's perp account.
    function deposit(uint256 amount) external returns (bytes32 coreHash) {
        return _deposit(usdc, amount, DESTINATION_PERP);
    }
}

/// @notice Like a deposit wallet with a destination: several tokens, each with its minimum, to the
/// sender's perp (0) or spot (1) account.
contract PerpBridgeB is PerpBridgeBase {
    address public owner;
    mapping(address token => uint256) public minimumDeposit;

    event TokenSet(address indexed token, uint256 minimumDeposit);

    constructor(address owner_) {
        owner = owner_;
    }

    /// @notice Supports `token` with a minimum deposit (0 stops supporting it).
    function setToken(address token, uint256 minimum) external {
        require(msg.sender == owner, "PerpBridgeB: not owner");
        minimumDeposit[token] = minimum;
        emit TokenSet(token, minimum);
    }

    function minimumDepositOf(address token) public view override returns (uint256) {
        return minimumDeposit[token];
    }

    /// @notice Deposits `amount` of `token` (approved to this bridge) to the sender's `destination`.
    function deposit(address token, uint256 amount, uint8 destination) external returns (bytes32 coreHash) {
        return _deposit(token, amount, destination);
    }
}
